phase "samtools_sort" {
  for_each = toset(["A", "B", "C", "D"])
  command  = "sort ${each.key}"
  outputs  = { bam = "sorted/${each.key}.bam" }
}

# One message at the reference, not one per instance of the phase that reads.
phase "merge" {
  for_each = toset(["x", "y", "z"])
  command  = "merge ${phase.samtools_sort.outputs.bam} > merged-${each.key}.bam" # ERROR: Reference to "outputs" of a phase with for_each
  outputs  = ["merged-${each.key}.bam"]
}

phase "index" {
  for_each = phase.samtools_sort
  command  = "index ${phase.samtools_sort.outputs["bam"]}" # ERROR: Reference to "outputs" of a phase with for_each
  outputs  = ["sorted/${each.key}.bai"]
}

# The right forms, and a key that is an attribute name.
phase "ok" {
  command = "echo ${join(" ", [for s in phase.samtools_sort : s.outputs.bam])} ${phase.samtools_sort["A"].outputs.bam} ${phase.samtools_sort.B.outputs.bam}"
}
