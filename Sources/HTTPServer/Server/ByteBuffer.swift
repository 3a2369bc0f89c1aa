import Glibc

/// A growable byte buffer with read and write indices, for bytes read from a socket and not yet
/// parsed. Its storage is dropped when it empties out between requests, so an idle keep-alive
/// connection holds no buffer at all.
final class ByteBuffer {
    private(set) var storage: UnsafeMutableRawPointer?
    private(set) var capacity = 0
    private(set) var readIndex = 0
    private(set) var writeIndex = 0

    var readableCount: Int { writeIndex - readIndex }
    var isEmpty: Bool { readIndex == writeIndex }

    deinit { free(storage) }

    var readable: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.map { $0 + readIndex }, count: readableCount)
    }

    func consume(_ n: Int) {
        readIndex += n
        if readIndex == writeIndex { readIndex = 0; writeIndex = 0 }
    }

    /// Makes room for at least `n` more bytes and returns where to write them.
    func writableSpace(atLeast n: Int) -> UnsafeMutableRawBufferPointer {
        if capacity - writeIndex < n {
            if readIndex > 0 {
                memmove(storage!, storage! + readIndex, readableCount)
                writeIndex -= readIndex
                readIndex = 0
            }
            if capacity - writeIndex < n {
                capacity = max(capacity * 2, writeIndex + n)
                storage = realloc(storage, capacity)
                precondition(storage != nil, "out of memory")
            }
        }
        return UnsafeMutableRawBufferPointer(start: storage! + writeIndex, count: capacity - writeIndex)
    }

    func commitWrite(_ n: Int) { writeIndex += n }

    /// Frees the storage if nothing is buffered.
    func releaseIfEmpty() {
        guard isEmpty, storage != nil else { return }
        free(storage)
        storage = nil
        capacity = 0
    }
}
