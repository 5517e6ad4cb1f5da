a = "a ${ b.c } d %{ if x }y%{ else }z%{ endif } ${ f( 1,2 ) }"
b = "%{ for i in l }${i}, %{ endfor }"
c = "${~ a ~}"
d = "${ {a=1}.a }"
e = "$${not} %%{not} \" \\ \n"
f = "${a}${b}%{if c}${d}%{endif}"
g = <<EOT
  hello ${ name }
    %{ if x }yes%{ endif }
${ [for x in l: x + 1] }
EOT
h = <<-EOT
    indented
      more ${ x }
    EOT
i = [<<EOT
in a list
EOT
, "x"]
j = f(<<EOT
an argument
EOT
)
k = {
  text = <<EOT
nested
EOT
  other = 1
}
l = "${
  a + b
}"
m = <<EOT
${x # comment in an interpolation
}text
EOT
