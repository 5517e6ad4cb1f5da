pool "api" {
  size = 2
}

pool "gpu" {
  size = 0 # ERROR: Invalid pool size
}

phase "a" {
  command   = "true"
  resources = { api = 3 } # ERROR: Phase asks for more than a pool holds
}

phase "b" {
  command   = "true"
  resources = { apii = 1 } # ERROR: Reference to undeclared pool
}
