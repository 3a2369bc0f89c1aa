import CCurl
import CLinux
import Glibc
import Reactor
import TransferVocabulary

/// Writing the response body to the output file (loop thread): buffered through the page cache,
/// or — for a large download, from its final response head on — with O_DIRECT (`DirectOutput`).
extension Transfer {
    /// Cluster mode: whether the lease's deadline has passed or the session was let go, so
    /// nothing more may be written to the output — checked before every write, the bytes that
    /// waited in the socket while this process was frozen included. A fenced transfer stops
    /// (`StopReason.fenced`). The handle's flag matters once a renewal has moved the replica's
    /// deadline on again: the sessions it lost were let go first, their transfers fenced.
    func isFenced() -> Bool {
        guard fencePassed else { return false }
        note(.fenced)
        return true
    }

    /// Cluster mode: the lease's deadline for writes to the output has passed (`WriteFence`).
    var fencePassed: Bool {
        guard let fence = handle.loop.shared.fence else { return false }
        return handle.isFenced || !fence.permitsNow
    }

    /// The `.file` case of the write callback (`now`: monotonic ns); false (with `writeFailure`)
    /// when the file cannot be written.
    func writeToFile(_ data: UnsafeRawBufferPointer, at now: UInt64) -> Bool {
        if let direct {
            do {
                try direct.append(data, at: now)
            } catch {
                writeFailure = error
                return false
            }
            writeOffset += Int64(data.count)
            handle.setReceived(writeOffset)
            return true
        }
        do {
            try FileWrite.all(outputFD, data, at: writeOffset)
        } catch {
            writeFailure = error.transferFailure
            return false
        }
        hasher?.written(data, at: writeOffset)
        writeOffset += Int64(data.count)
        handle.setReceived(writeOffset)
        if writeOffset - writebackOffset >= Transfer.writebackStep { startWriteback() }
        return true
    }

    /// The final response announces `length` more bytes: at `DirectOutput.minimumLength` or more
    /// they are written with O_DIRECT, unless the file system or the process-wide limit says no.
    func beginDirectOutput(expecting length: Int64) {
        guard handle.loop.shared.directWrites, direct == nil, case .file = files.output, length >= DirectOutput.minimumLength else { return }
        let hasher = hasher
        direct = DirectOutput.open(file: outputFD, at: writeOffset) { chunk in
            if let hasher { hasher.stage(chunk) } else { chunk.pool?.give(chunk) }
        }
    }

    /// Whether the direct output can take a piece of `count` bytes now; if not, the transfer
    /// pauses until the hasher gives a chunk back: the paused piece is offered again then, on the
    /// loop (outside curl's callbacks: unpausing may hand it to the write callback at once).
    func hasRoom(in direct: DirectOutput, for count: Int) -> Bool {
        // Held by the pool only until a chunk comes back or the output closes (which every end
        // of the attempt does), so the transfer it holds is let go.
        let multi = handle.loop
        if direct.hasRoom(for: count, orWait: { [self] in multi.loop.execute { multi.tell(self, .unpaused(.directOutput)) } }) {
            return true
        }
        note(.paused(.directOutput))
        return false
    }

    /// curl hands the paused piece over again; the time paused is not idle time.
    func unpause() {
        guard let easy else { return }
        lastActivity = MonotonicClock.now()
        _ = transferd_easy_unpause(UnsafeMutableRawPointer(easy))
    }

    /// The attempt ends: what the direct output holds is written, so the file holds every byte
    /// counted in `writeOffset` — unless the attempt was fenced, when nothing more is. The
    /// failure, when that cannot be done.
    func closeDirectOutput() -> TransferFailure? {
        guard let direct else { return nil }
        self.direct = nil
        writebackOffset = writeOffset
        if lifecycle.stopReason == .fenced || isFenced() {
            direct.abandon()
            return nil
        }
        do {
            try direct.close()
        } catch {
            return error
        }
        return nil
    }

    /// A completed download is fsynced before it is renamed into place. Left to the kernel, a
    /// large file's pages stay dirty until then (writeback starts at 10% of memory dirty), and
    /// that fsync writes it all while the task waits: 0.55 s for 1 GiB on this machine's disk.
    /// Starting writeback every `writebackStep` (sync_file_range(2) SYNC_FILE_RANGE_WRITE: it
    /// queues the pages for writing and does not wait for them) lets the disk write while the
    /// transfer goes on, and the fsync finds almost nothing left (0.02 s). It runs here, on the
    /// loop: its cost (block allocation, I/O submission: ~4 ms per 32 MiB) would otherwise fall
    /// on the hasher, which bounds a large download; like a write under dirty-page throttling,
    /// it can wait when the device's queue is full.
    static let writebackStep: Int64 = 32 << 20

    func startWriteback() {
        _ = transferd_start_writeback(outputFD, writebackOffset, writeOffset - writebackOffset)
        writebackOffset = writeOffset
    }
}
