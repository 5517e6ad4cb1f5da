variable "model" {
  default = "m"
}

phase "a" {
  command = "echo ${var.modle}" # ERROR: Unsupported attribute
}
