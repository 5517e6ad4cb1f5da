phase "a" {
  for_each = 3 # ERROR: Invalid for_each argument
  command  = "true"
}

phase "b" {
  for_each = ["x", "x"] # ERROR: Invalid for_each argument
  command  = "true"
}
