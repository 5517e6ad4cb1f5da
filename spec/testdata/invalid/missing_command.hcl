phase "a" { # ERROR: Missing required argument
  outputs = ["x"]
}
