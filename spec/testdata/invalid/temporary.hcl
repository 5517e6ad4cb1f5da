phase "sort" {
  command   = "sort in.txt > mid/sorted.txt"
  outputs   = { sorted = "mid/sorted.txt", log = "sort.log" }
  temporary = [
    "sorted",
    "mid/sorted.txt", # ERROR: Duplicate temporary output
    "mid/other.txt",  # ERROR: Temporary output is not an output
  ]
}

phase "count" {
  command = "wc -l ${phase.sort.outputs.sorted} > count.txt"
  outputs = ["count.txt"]
}
