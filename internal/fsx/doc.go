// Package fsx is the file layer under cairn's write protocols: every
// create, write, sync, chmod, link, rename, remove and mkdir that publishes
// a cache object or a workspace state file goes through the [FS] returned
// by [Get]. Production uses [OS]; tests swap in the fault and recording
// implementations of package fsxtest with [Set] to fail the n-th call of an
// operation or to enumerate the states a power cut could leave.
//
// Reads do not go through it: they verify what they read instead. A
// write that fails for want of room is told as a [NoSpaceError], saying
// how much is left where.
package fsx
