package engine

import ()

// The fuzz targets of T31 for the engine's decoders of bytes found on disk
// (a workspace's .cairn, which a crash, a disk or a teammate may have
// damaged). Seeds are in testdata/fuzz/<target>; `make fuzz` fuzzes each.
