phase "a" {
  command = "true"
  inputs  = ["x.txt"] # ERROR: Input is the phase's own output
  outputs = ["x.txt"]
}
