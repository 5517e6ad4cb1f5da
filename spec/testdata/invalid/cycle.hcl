phase "a" { # ERROR: Dependency cycle between phases
  command = "cat ${phase.c.outputs[0]} > a"
  outputs = ["a"]
}

phase "b" {
  command = "cat ${phase.a.outputs[0]} > b"
  outputs = ["b"]
}

phase "c" {
  command = "true"
  inputs  = ["b"]
  outputs = ["c"]
}
