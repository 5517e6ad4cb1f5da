a = - 1
b = ! true
c = -x
d = 1 - -1
e = [ -1, - 2, 3-1, x -1 ]
f = x - 1
g = (-1)
h = !a && ! b
i = x ? y : z
j = x==1?"a":"b"
k = 1+2*3/4%5
l = x>=1 && y<=2 || z!=3
m = a==b
n = (1+2)*3
o = 1 > 2
p = 1<2
q = [ for x in y : x if z ]
r = {for k, v in m : k => v...}
s = [for x in [1,2]: x]
t = {for k,v in m: k=>v if v>0}
u = b.*.c
v = e[*].f
w = h [ * ] . i
x = b.c[0]["k"].d
y = var.list [ 0 ]
z = f(x)[0]
aa = {a=1}["a"]
bb = [1][0]
cc = concat( x , y... )
dd = f()
ee = provider::p::f(1)
gg = upper( "x" ) == "X" ? -1 : 1
hh = {a: 1, "b": 2}
ii = (var.x)
jj = -(1)
kk = x.y[*]
ll = [for i, v in [for x in l: x * 2]: i + v]
mm = !(a || b)
nn = 1 - (-1)
oo = a ? -1 : -2
pp = [ 1, -2 ][ 0 ]
