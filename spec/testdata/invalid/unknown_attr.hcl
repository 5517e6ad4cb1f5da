phase "a" {
  command = "true"
  ouputs  = ["x"] # ERROR: Unsupported argument
}
