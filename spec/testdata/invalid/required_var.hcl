variable "model" {} # ERROR: No value for required variable

phase "a" {
  command = "echo ${var.model}"
}
