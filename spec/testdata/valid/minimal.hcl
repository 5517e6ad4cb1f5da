phase "hello" {
  command = "echo hello > out.txt"
  outputs = ["out.txt"]
}
