phase "a" {
  command = "" # ERROR: Empty command
  inputs  = "single.txt" # ERROR: Invalid value for inputs
  env     = { "bad name" = "x" } # ERROR: Invalid environment variable name
  pipefail = "maybe" # ERROR: Invalid value for pipefail
}
