phase "a" {
  command = "true"
  outputs = {
    up  = "../escape.txt" # ERROR: Output path outside the workspace
    abs = "/tmp/abs.txt" # ERROR: Output path outside the workspace
    st  = ".cairn/x" # ERROR: Output path in cairn's state directory
  }
}
