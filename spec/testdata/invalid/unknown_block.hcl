phase "a" {
  command = "true"
}

phsae "b" { # ERROR: Unsupported block type
  command = "true"
}
