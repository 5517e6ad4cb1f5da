phase "a" {
  command = "true"
  slurm2 {}
}
