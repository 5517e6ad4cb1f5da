phase "c" {
  command = "echo ${each.key}" # ERROR: Reference to "each" in a phase without for_each
}
