locals { a = file("fifo") 
 b = file("/dev/zero")
 c = file("big")
 d = file(".") }
phase "a" {
  command = "true"
}
