// Leading comment of the file.
/* A block comment
   over three lines
   before a block. */
phase "a" {
  # alone on a line
  command = "true" # why true
  outputs = ["x"]   // the outputs
  a = 1 /* inline */
  /* before */ b = 2

  long_name_here = 2
  # a comment line ends the run
  c = 3
  /* alone block */
  dd = 4 # c
  eee = [ # opens a list
    1, # one
    22, # twenty-two
  ]
  f = /* in value */ 5 # and after
  g = 6 /* not last: a newline follows */
  hhh = 7 // slash comment
} # end of block
# last line
