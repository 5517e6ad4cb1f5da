package cache

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Packed action entries (FORMAT.md, "Packed entries"). One process appends
// the entries it stores to one pack file and publishes each under its
// usual name ac/<xx>/<key> as a hard link to the pack: link(2) allocates
// no inode, and creating an inode is what a cold run paid most for per
// entry on a filesystem with many recently freed inodes.
//
// A pack is the line "cairn-ac 3\n" followed by records. A record is a
// fixed header, then its body: exactly the stored form of a format 1 or 2
// entry (the bytes an entry file would hold). The header is
//
//	"cpr1"                     magic, 4 bytes
//	key                        32 bytes
//	uint32 big-endian          body length
//	SHA-256 of the body        32 bytes
//	CRC-32C of the 72 bytes above, big-endian, 4 bytes
//
// so a scan can tell a whole header (whose length it may trust) from a
// torn or garbage one, where it stops: records before it stay readable.

const (
	// EntryFormatPacked is the version of a pack file's header line. It is
	// a file format, not an entry format: the records hold format 1, 2 or 4
	// entries. A cairn that knows only those treats a pack as an entry in
	// a newer format: a miss, left in place.
	EntryFormatPacked = 3

	packRecMagic  = "cpr1"
	packRecHeader = 4 + 32 + 4 + 32 + 4
	// packMaxSize is the size at which a writer starts a new pack.
	packMaxSize = 64 << 20

	// MaxPackRead bounds a read of a whole entry file, a pack included.
	MaxPackRead = packMaxSize + maxEntrySize
)

var (
	packHeader = entryHeaderFor(EntryFormatPacked)
	crcTable   = crc32.MakeTable(crc32.Castagnoli)
)

// errPackRecord marks a pack name whose key has no good record in the
// pack: corrupt, like a damaged entry file.
var errPackRecord = errors.New("no intact record for this key in the pack it names")

// appendPackRecord appends the record of the entry for key, stored form
// body, to dst.
func appendPackRecord(dst []byte, key ActionID, body []byte) []byte {
	var h [packRecHeader]byte
	copy(h[0:4], packRecMagic)
	copy(h[4:36], key[:])
	binary.BigEndian.PutUint32(h[36:40], uint32(len(body)))
	sum := sha256.Sum256(body)
	copy(h[40:72], sum[:])
	binary.BigEndian.PutUint32(h[72:76], crc32.Checksum(h[:72], crcTable))
	dst = append(dst, h[:]...)
	return append(dst, body...)
}

// packRecord is a parsed record header.
type packRecord struct {
	key  ActionID
	n    int64 // body length
	sum  [32]byte
	size int64 // header plus body
}

// parsePackHeader parses a record header; ok is false for a torn or
// garbage one (wrong magic or CRC, or a length over maxEntrySize).
func parsePackHeader(h []byte) (r packRecord, ok bool) {
	if len(h) < packRecHeader || string(h[0:4]) != packRecMagic {
		return r, false
	}
	if binary.BigEndian.Uint32(h[72:76]) != crc32.Checksum(h[:72], crcTable) {
		return r, false
	}
	copy(r.key[:], h[4:36])
	r.n = int64(binary.BigEndian.Uint32(h[36:40]))
	copy(r.sum[:], h[40:72])
	r.size = packRecHeader + r.n
	return r, r.n <= maxEntrySize
}

// checkPackRecord checks that rec (a header and the body after it) is an
// intact record for key, and returns its body.
func checkPackRecord(rec []byte, key ActionID) ([]byte, error) {
	r, ok := parsePackHeader(rec)
	switch {
	case !ok:
		return nil, errors.New("record header torn or garbage")
	case r.key != key:
		return nil, fmt.Errorf("record holds key %s", r.key.Short())
	case int64(len(rec)) != r.size:
		return nil, fmt.Errorf("record of %d bytes, header says %d", len(rec), r.size)
	}
	body := rec[packRecHeader:]
	if sha256.Sum256(body) != r.sum {
		return nil, errors.New("record body does not hash to its header's SHA-256")
	}
	return body, nil
}

// scanPack calls fn for each intact record header of the pack read from
// r (positioned after the header line, at offset off), with its offset,
// until the first torn or garbage header or the end of r. Bodies are
// skipped, not checked. It returns the offset where it stopped, and an
// error only for a failed read (not for a record cut short).
func scanPack(r *bufio.Reader, off int64, fn func(rec packRecord, off int64)) (int64, error) {
	var h [packRecHeader]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return off, eofOK(err)
		}
		rec, ok := parsePackHeader(h[:])
		if !ok {
			return off, nil
		}
		if _, err := r.Discard(int(rec.n)); err != nil {
			return off, eofOK(err) // body cut short: torn
		}
		fn(rec, off)
		off += rec.size
	}
}

// eofOK drops an end-of-file error: a pack ending mid-record is torn, not
// unreadable.
func eofOK(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// The readers' index of packs: for each pack file (device and inode) the
// offset of each key's record, found by one scan and extended as the pack
// grows, so reading n entries of one pack reads its headers once, not n
// times. The index only says where to look: every record read is checked
// against its key and hash, and a miss through an index kept from before
// (the inode may have been reused by another pack) rescans the file.

type packID struct{ dev, ino uint64 }

type packLoc struct{ off, size int64 }

type packIndex struct {
	mu      sync.Mutex
	locs    map[ActionID]packLoc
	scanned int64 // where the last scan stopped
}

var packIndexes struct {
	mu sync.Mutex
	m  map[packID]*packIndex
}

// maxPackIndexes bounds the readers' index; it is dropped whole past it.
const maxPackIndexes = 1024

func packIndexFor(id packID, fresh bool) (idx *packIndex, cached bool) {
	packIndexes.mu.Lock()
	defer packIndexes.mu.Unlock()
	if packIndexes.m == nil || len(packIndexes.m) >= maxPackIndexes {
		packIndexes.m = make(map[packID]*packIndex)
	}
	if idx := packIndexes.m[id]; idx != nil && !fresh {
		return idx, true
	}
	idx = &packIndex{locs: make(map[ActionID]packLoc)}
	packIndexes.m[id] = idx
	return idx, false
}

// find returns the location of key's record in the pack f (of size size),
// scanning the part of the pack not indexed yet if needed.
func (idx *packIndex) find(f *os.File, size int64, key ActionID) (packLoc, bool, error) {
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if loc, ok := idx.locs[key]; ok {
		return loc, true, nil
	}
	start := idx.scanned
	if start == 0 {
		start = int64(len(packHeader))
	}
	if start >= size {
		return packLoc{}, false, nil
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, size-start), 256<<10)
	end, err := scanPack(br, start, func(rec packRecord, off int64) {
		if _, dup := idx.locs[rec.key]; !dup { // the first record of a key is its record
			idx.locs[rec.key] = packLoc{off, rec.size}
		}
	})
	if err != nil {
		return packLoc{}, false, err
	}
	idx.scanned = end
	loc, ok := idx.locs[key]
	return loc, ok, nil
}

// readPackedEntry returns the stored form of key's entry from the pack f
// (stat fi), and the size of its record. bad is set when the pack has no
// intact record for key (the name is then corrupt); err for an I/O error.
func readPackedEntry(f *os.File, fi fs.FileInfo, key ActionID) (b []byte, size int64, bad, err error) {
	dev, ino, _, ok := FileID(fi)
	if !ok {
		// No inode numbers here: index the pack for this read only.
		dev, ino = 0, 0
	}
	id := packID{dev, ino}
	idx, cached := packIndexFor(id, !ok)
	for {
		loc, found, err := idx.find(f, fi.Size(), key)
		if err != nil {
			return nil, 0, nil, err
		}
		if found {
			rec := make([]byte, loc.size)
			if _, err := f.ReadAt(rec, loc.off); err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, nil, err
			}
			body, berr := checkPackRecord(rec, key)
			if berr == nil {
				return body, loc.size, nil, nil
			}
			bad = berr
		} else {
			bad = errPackRecord
		}
		if !cached {
			return nil, 0, bad, nil
		}
		idx, cached = packIndexFor(id, true) // the index may be of an earlier file on this inode
	}
}

// ReadEntryFile reads the stored form of key's entry from its open file f:
// the whole file, or, if f is a pack, key's record in it. size is what the
// entry accounts for on disk (the file's size, or its record's). bad is
// set for a pack without an intact record for key; err for a read error.
func ReadEntryFile(f *os.File, key ActionID) (b []byte, size int64, bad, err error) {
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// the whole file is in head
		head = head[:n]
		if !bytes.HasPrefix(head, []byte(packHeader)) {
			return head, int64(n), nil, nil
		}
	default:
		return nil, 0, nil, err
	}
	if bytes.HasPrefix(head[:n], []byte(packHeader)) {
		fi, err := f.Stat()
		if err != nil {
			return nil, 0, nil, err
		}
		b, size, bad, err := readPackedEntry(f, fi, key)
		if bad == nil && err == nil {
			if v, ok := entryVersion(b); ok && v == EntryFormatPacked {
				bad = errors.New("a pack record holds a pack")
			}
		}
		return b, size, bad, err
	}
	rest, err := io.ReadAll(io.LimitReader(f, maxEntrySize+1-int64(n)))
	if err != nil {
		return nil, 0, nil, err
	}
	b = append(head[:n:n], rest...)
	return b, int64(len(b)), nil, nil
}

// packWriter appends the entries one Dir stores to its current pack.
type packWriter struct {
	mu  sync.Mutex // guards the fields below and every write to cur
	cur *pack
	off bool // packing found impossible here: every put writes a file
}

// pack is one pack file being written, open for appending, named by its
// temp file in tmp/ until the last put using it is done and it is retired.
type pack struct {
	t       *tempFile
	size    int64 // bytes written
	keys    map[ActionID]bool
	users   int  // puts between appending and linking
	retired bool // no more appends; closed and unnamed when users is 0
	broken  bool // a write or sync failed, or its name vanished

	syncMu     sync.Mutex // one fsync at a time; later puts share it
	synced     int64      // bytes known durable
	syncFailed bool       // an fsync failed: nothing after synced may be trusted
}

// errPackUnusable makes a put fall back to writing its own file.
var errPackUnusable = errors.New("pack unusable")

// startPack creates a new pack in tmp/ with its header line written,
// read-only from the start (the open descriptor still appends).
func (c *Dir) startPack() (*pack, error) {
	t, err := c.newTemp("pack")
	if err != nil {
		return nil, err
	}
	if err := t.makeReadOnly(); err != nil {
		t.abort()
		return nil, err
	}
	if _, err := t.Write([]byte(packHeader)); err != nil {
		t.abort()
		return nil, err
	}
	return &pack{t: t, size: int64(len(packHeader)), keys: make(map[ActionID]bool)}, nil
}

// appendEntry appends key's record to the current pack, starting a new
// one if there is none, it is full or broken, or it already holds key (a
// name removed since, stored again: a pack holds each key once). It
// returns the pack, with one more user, and the end of the record.
func (c *Dir) appendEntry(key ActionID, b []byte) (*pack, int64, error) {
	w := &c.packs
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.off {
		return nil, 0, errPackUnusable
	}
	p := w.cur
	if p != nil && (p.broken || p.keys[key] || p.size+packRecHeader+int64(len(b)) > packMaxSize) {
		c.retireLocked(p)
		p = nil
	}
	if p == nil {
		np, err := c.startPack()
		if err != nil {
			return nil, 0, errPackUnusable
		}
		p, w.cur = np, np
	}
	rec := appendPackRecord(make([]byte, 0, packRecHeader+len(b)), key, b)
	n, err := p.t.Write(rec)
	p.size += int64(n)
	if err != nil {
		p.broken = true // its end is torn now; readers stop before it
		return nil, 0, errPackUnusable
	}
	p.keys[key] = true
	p.users++
	return p, p.size, nil
}

// syncTo makes the pack durable up to end: one fsync covers every record
// appended before it began, so concurrent puts share fsyncs.
func (c *Dir) syncTo(p *pack, end int64) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.synced >= end {
		return nil
	}
	if p.syncFailed {
		// After a failed fsync the kernel may have dropped the dirty
		// pages and a second fsync succeed without writing them.
		return errPackUnusable
	}
	c.packs.mu.Lock()
	target := p.size
	c.packs.mu.Unlock()
	if err := p.t.sync(); err != nil {
		p.syncFailed = true
		c.packs.mu.Lock()
		p.broken = true
		c.packs.mu.Unlock()
		return errPackUnusable
	}
	p.synced = target
	return nil
}

// release ends one put's use of p, and closes a retired pack whose last
// user this was.
func (c *Dir) release(p *pack, broken bool) {
	c.packs.mu.Lock()
	defer c.packs.mu.Unlock()
	p.users--
	if broken {
		p.broken = true
	}
	if p.retired && p.users == 0 {
		p.t.finish()
	}
}

func (c *Dir) retireLocked(p *pack) {
	if p.retired {
		return
	}
	p.retired = true
	if c.packs.cur == p {
		c.packs.cur = nil
	}
	if p.users == 0 {
		p.t.finish() // closes it and removes its temp name; the links stay
	}
}

// Close ends the Dir's use of its current pack: the file is closed and
// its temp name removed (the entries published from it keep it). Puts
// after Close start a new pack. A process that dies first leaves the temp
// name, which GC removes after TempGrace like any temp file.
func (c *Dir) Close() error {
	c.closeACDir()
	c.packs.mu.Lock()
	defer c.packs.mu.Unlock()
	if p := c.packs.cur; p != nil {
		c.retireLocked(p)
	}
	return nil
}

// putPacked publishes the stored form b of key's entry as a link to a
// pack. It returns errPackUnusable, having published nothing, when the
// entry must be written as its own file instead: packing impossible on
// this filesystem, the pack's name gone, its write or fsync failed. refs
// are refreshed just before linking, as for a file.
func (c *Dir) putPacked(key ActionID, b []byte, refs []blobRef) error {
	p, end, err := c.appendEntry(key, b)
	if err != nil {
		return err
	}
	broken := false
	defer func() { c.release(p, broken) }()
	if err := c.syncTo(p, end); err != nil {
		return err
	}
	if err := c.refreshRefs(refs); err != nil {
		return err
	}
	dst := c.entryPath(key)
	for try := 0; try < 3; try++ {
		existed, err := linkPack(p.t, dst)
		switch {
		case err == nil && !existed:
			return p.t.syncDir(filepath.Dir(dst))
		case err == nil:
			done, err := c.existingEntry(key, dst, b)
			if done || err != nil {
				return err
			}
			continue
		case errors.Is(err, fs.ErrNotExist):
			// The pack's temp name is gone (a GC of old temp files during
			// a long run): this put writes a file, the next a new pack.
			broken = true
			return errPackUnusable
		case errors.Is(err, syscall.EMLINK):
			broken = true // full: the next put starts a new pack
			return errPackUnusable
		case linkUnsupported(err), errors.Is(err, syscall.EXDEV):
			// No more packs here: retire this one now (it is closed and
			// unnamed when its last put is done), or it would stay open,
			// with its temp name, until Close: appendEntry no longer
			// looks at it.
			c.packs.mu.Lock()
			c.packs.off = true
			c.retireLocked(p)
			c.packs.mu.Unlock()
			broken = true
			return errPackUnusable
		default:
			return err
		}
	}
	return errors.New("an invalid entry is in the way and could not be moved")
}
