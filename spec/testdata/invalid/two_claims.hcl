phase "a" {
  command = "true"
  outputs = ["out/x.txt"]
}

phase "b" { # ERROR: Two phases claim one output
  command = "true"
  outputs = ["out/x.txt"]
}

phase "c" { # ERROR: Two phases claim one output
  command = "true"
  outputs = ["out"]
}
