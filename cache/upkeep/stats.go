package upkeep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairn-run/cairn/cache"
	"github.com/klauspost/compress/zstd"
)

// Stats describes what a cache directory holds. Sizes are apparent file
// sizes (st_size), not blocks allocated.
type Stats struct {
	Root   string
	Shared bool

	Entries    int   // files in ac/ with a valid name
	EntryBytes int64 // their size on disk, each pack counted once
	Blobs      int   // files in cas/ with a valid name; a digest stored both raw and compressed counts twice
	BlobBytes  int64 // their size on disk
	Bytes      int64 // EntryBytes + BlobBytes on disk; GC's MaxSize limits the same but counts a packed entry as its record, so a pack whose names GC evicted only in part keeps more on disk than GC counts

	CompressedBlobs int // blobs stored as .zst
	// UncompressedBytes is the content size of every raw blob plus that of
	// every compressed blob whose zstd frame header records it.
	UncompressedBytes int64
	// UnknownSizeBlobs counts compressed blobs whose frame header does not
	// record the content size (blobs over 256 KiB, compressed as a
	// stream): left out of UncompressedBytes and CompressionRatio.
	// UnknownSizeBytes is their size on disk.
	UnknownSizeBlobs int
	UnknownSizeBytes int64
	// CompressionRatio is UncompressedBytes over the on-disk size of the
	// same blobs (so ≥ 1 when compression saves space); 0 with no blobs.
	CompressionRatio float64

	TempFiles       int   // files in tmp/: writes in flight, or left by crashes
	TempBytes       int64 // their size; a pack's temp name counts its pack, counted in EntryBytes too while it has names
	Quarantined     int   // objects moved to quarantine/ after failing verification
	QuarantineBytes int64

	// Sessions are the newest sessions asked for, newest first; Hits,
	// Misses and Puts are summed over them, and HitRate is
	// Hits/(Hits+Misses) (0 when there were no lookups).
	Sessions           []SessionStats
	Hits, Misses, Puts int
	HitRate            float64
}

// StatsOf counts the cache's entries, blobs and bytes, reads the zstd frame
// header of each compressed blob for its content size, and summarises the
// newest recent usage sessions (all of them if recent ≤ 0). It takes no
// lock and reads no object in full. Objects removed while it runs are
// skipped. A non-nil error lists what could not be read; the returned Stats
// then covers the rest.
func StatsOf(c *cache.Dir, recent int) (*Stats, error) {
	s := &Stats{Root: c.Root(), Shared: c.Shared()}
	var errs []error
	onErr := func(path string, err error) { errs = append(errs, err) }

	packs := map[[2]uint64]bool{} // a pack's bytes count once, whatever its names
	walkStore(filepath.Join(c.Root(), cache.ACDir), func(f storeFile, shard bool) bool {
		if shard {
			return f.info.IsDir() && validShard(f.name)
		}
		if _, ok := parseEntryFileName(filepath.Base(filepath.Dir(f.path)), f.name); ok && f.info.Mode().IsRegular() {
			s.Entries++
			if dev, ino, nlink, ok := cache.FileID(f.info); ok && nlink > 1 {
				if packs[[2]uint64{dev, ino}] {
					return false
				}
				packs[[2]uint64{dev, ino}] = true
			}
			s.EntryBytes += f.info.Size()
		}
		return false
	}, onErr)

	var knownDisk int64
	walkStore(filepath.Join(c.Root(), cache.CASDir), func(f storeFile, shard bool) bool {
		if shard {
			return f.info.IsDir() && validShard(f.name)
		}
		_, compressed, ok := parseBlobFileName(filepath.Base(filepath.Dir(f.path)), f.name)
		if !ok || !f.info.Mode().IsRegular() {
			return false
		}
		size := f.info.Size()
		s.Blobs++
		s.BlobBytes += size
		if !compressed {
			s.UncompressedBytes += size
			knownDisk += size
			return false
		}
		s.CompressedBlobs++
		n, known, err := zstdContentSize(f.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s.Blobs--
			s.BlobBytes -= size
			s.CompressedBlobs--
		case err != nil, !known:
			s.UnknownSizeBlobs++
			s.UnknownSizeBytes += size
		default:
			s.UncompressedBytes += n
			knownDisk += size
		}
		return false
	}, onErr)
	s.Bytes = s.EntryBytes + s.BlobBytes
	if knownDisk > 0 {
		s.CompressionRatio = float64(s.UncompressedBytes) / float64(knownDisk)
	}

	s.TempFiles, s.TempBytes = countDir(filepath.Join(c.Root(), cache.TempDir), onErr)
	s.Quarantined, s.QuarantineBytes = countDir(filepath.Join(c.Root(), cache.QuarantineDir), onErr)

	sessions, err := readSessions(c, time.Now(), false)
	if err != nil {
		errs = append(errs, err)
	}
	for _, sf := range sessions {
		if !sf.valid {
			continue
		}
		if recent > 0 && len(s.Sessions) == recent {
			break
		}
		s.Sessions = append(s.Sessions, sf.SessionStats)
		s.Hits += sf.Hits
		s.Misses += sf.Misses
		s.Puts += sf.Puts
	}
	if s.Hits+s.Misses > 0 {
		s.HitRate = float64(s.Hits) / float64(s.Hits+s.Misses)
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("cache stats %s: %w", c.Root(), errors.Join(errs...))
	}
	return s, nil
}

// zstdContentSize returns the content size a compressed blob's frame
// header records, if it records one.
func zstdContentSize(path string) (size int64, known bool, err error) {
	f, err := cache.OpenObject(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var buf [zstd.HeaderMaxSize]byte
	n, err := io.ReadFull(f, buf[:])
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, false, err
	}
	var h zstd.Header
	if err := h.Decode(buf[:n]); err != nil || !h.HasFCS || h.FrameContentSize > 1<<62 {
		return 0, false, nil
	}
	return int64(h.FrameContentSize), true, nil
}

// countDir counts the names in dir (not .nfs* files) and their sizes.
func countDir(dir string, onErr func(string, error)) (n int, size int64) {
	des, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			onErr(dir, err)
		}
		return 0, 0
	}
	for _, de := range des {
		if isNFSTemp(de.Name()) {
			continue
		}
		st, err := de.Info()
		if err != nil {
			continue // gone meanwhile
		}
		n++
		size += st.Size()
	}
	return n, size
}

// storeFile is one name found in cas/ or ac/, with what lstat said.
type storeFile struct {
	path string
	name string
	info fs.FileInfo
}

// walkStore lists a two-level store directory (cas/ or ac/). visit is
// called for each name directly in dir with shard = true, and returns
// whether to list it as a shard directory; then for each name inside it
// with shard = false. Names that vanish meanwhile (ENOENT: GC or a
// quarantine got there first) are skipped, and so are NFS silly-rename
// files. Errors listing a directory go to onErr, and the walk goes on.
func walkStore(dir string, visit func(f storeFile, shard bool) bool, onErr func(path string, err error)) {
	shards, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			onErr(dir, err)
		}
		return
	}
	for _, sd := range shards {
		if isNFSTemp(sd.Name()) {
			continue
		}
		st, err := sd.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				onErr(filepath.Join(dir, sd.Name()), err)
			}
			continue
		}
		sp := filepath.Join(dir, sd.Name())
		if !visit(storeFile{path: sp, name: sd.Name(), info: st}, true) {
			continue
		}
		files, err := os.ReadDir(sp)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				onErr(sp, err)
			}
			continue
		}
		for _, de := range files {
			if isNFSTemp(de.Name()) {
				continue
			}
			st, err := de.Info()
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					onErr(filepath.Join(sp, de.Name()), err)
				}
				continue
			}
			visit(storeFile{path: filepath.Join(sp, de.Name()), name: de.Name(), info: st}, false)
		}
	}
}

// validShard accepts the name of a shard directory: two lowercase hex
// digits.
func validShard(name string) bool {
	return len(name) == 2 && isLowerHex(name[0]) && isLowerHex(name[1])
}

func isLowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// parseBlobFileName parses the name of a blob file in shard directory
// shard: <64 hex>, or <64 hex>.zst, starting with the shard's two digits.
func parseBlobFileName(shard, name string) (d cache.Digest, compressed bool, ok bool) {
	base, compressed := strings.CutSuffix(name, cache.CompressedSuffix)
	v, err := cache.ParseDigest(base)
	if err != nil || base[:2] != shard {
		return cache.Digest{}, false, false
	}
	return v, compressed, true
}

// parseEntryFileName parses the name of an entry file in shard directory
// shard.
func parseEntryFileName(shard, name string) (cache.ActionID, bool) {
	v, err := cache.ParseActionID(name)
	if err != nil || name[:2] != shard {
		return cache.ActionID{}, false
	}
	return v, true
}
