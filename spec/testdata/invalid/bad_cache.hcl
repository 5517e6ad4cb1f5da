experiment "x" {
  cache {
    shared = "world" # ERROR: Invalid cache.shared
    remote = "https://alice:hunter2@cache.lab:9090" # ERROR: Invalid cache.remote
  }
}

phase "a" {
  command = "true"
}
