experiment "x" {
  cache {
    remote = "ftp://cache.lab/" # ERROR: Invalid cache.remote
  }
}

phase "a" {
  command = "true"
}
