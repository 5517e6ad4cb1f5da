phase	"a"	{
	command	=	"x"
		b   =    2
  c=3
      dddd     =4
}
list = [
1,
  2,
      3,
]
nest = [[
1
]]
call = foo({
b = 1
})
deep = {
a = {
b = {
c = [
{ d = 1 },
]
}
}
}
neg = [
-1,
- 2
]
mixed = { a = [1,
2], b = 3 }
