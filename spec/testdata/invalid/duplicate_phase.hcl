phase "a" {
  command = "true"
}

phase "a" { # ERROR: Duplicate phase name
  command = "true"
}
