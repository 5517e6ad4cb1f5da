phase "train" {
  command = "true"
  outputs = { model = "out/model.bin", scores = "out/scores.json" }
  metrics = [
    "scores",
    "out/model.bin",
    "out/missing.json", # ERROR: Metrics file is not an output
    "out/scores.json", # ERROR: Duplicate metrics file
  ]
}

phase "bare" {
  command = "true"
  metrics = ["m.json"] # ERROR: Metrics file is not an output
}

phase "typed" {
  command = "true"
  outputs = ["a.json"]
  metrics = "a.json" # ERROR: Invalid value for metrics
}
