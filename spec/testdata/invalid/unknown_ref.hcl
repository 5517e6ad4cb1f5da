phase "prepare" {
  command = "true"
  outputs = { data = "d.txt" }
}

phase "b" {
  command    = "cat ${phase.prepar.outputs.data}" # ERROR: Reference to undeclared phase
  depends_on = [phase.missing] # ERROR: Reference to undeclared phase
}
