import Glibc
import TransferModel

extension TaskFiles {
    /// Files that belong to nothing, left by a stop at the wrong moment (`kill -9` between writing
    /// a file and committing its row, or between deleting a row and its file): temporary files of
    /// attempts no task will continue, kept partials and finished files whose task is gone, blob
    /// files without a row, and our temporary files beside client destinations (ephemeral tasks
    /// of an earlier run). Runs once after start-up on the file-work queue, so a large data
    /// directory does not delay readiness. Only files whose status last changed before `startedAt`
    /// are candidates: a write or rename since (rename updates ctime) may be work begun in this run.
    func sweepOrphanFiles(startedAt: Timestamp) {
        fileWork.async { [self] in
            let old = { (dirfd: Int32, name: String) in TaskFiles.changed(dirfd, name, before: startedAt) }
            for session in journal.registry.all where session.mode.isDurable {
                for directory in [layout.filesDirectory(session.identifier), layout.bodiesDirectory(session.identifier)] {
                    sweep(directory, where: { old($0, $1) && !ownsSessionFile(session, $1) })
                }
            }
            if let blobs {
                sweep(blobs.directory, where: { dirfd, name in
                    old(dirfd, name) && (name.hasPrefix(".") || (try? blobs.lookup(name)).flatMap { $0 } == nil)
                })
            }
            let live = liveDestinationTemporaries()
            for root in allowedRoots.roots {
                var budget = TaskFiles.destinationSweepBudget
                sweepTree(root.fd, budget: &budget) { dirfd, name in
                    name.hasPrefix(".transferd-") && name.hasSuffix(".part") && !live.contains(name) && old(dirfd, name)
                }
            }
        }
    }

    /// Most directory entries looked at beneath one `--allow-path` root: it is the client's tree,
    /// possibly large, and leftovers there are only ever beside destinations.
    static let destinationSweepBudget = 200_000

    /// Whether a name in a durable session's `files`/`bodies` directory belongs to a task: a
    /// temporary `.<id>.part` to an unfinished one, a kept `.<id>.resume` to one whose error carries
    /// resume data, anything else (a finished file or body, named by its task id) to a stored task.
    private func ownsSessionFile(_ session: SessionState, _ name: String) -> Bool {
        if name.hasPrefix("."), name.hasSuffix(".part") {
            let id = String(name.dropFirst().dropLast(5))
            return session.locked { session.tasks[id].map { !$0.record.isCompleted && !$0.lifecycle.isDeleted } ?? false }
        }
        if name.hasPrefix("."), name.hasSuffix(".resume") {
            let id = String(name.dropFirst().dropLast(7))
            return (try? journal.record(session, id))?.error?.resumeData != nil
        }
        if session.locked({ session.tasks[name] }) != nil { return true }
        return (try? journal.store.taskExists(session: session.identifier, id: name)) ?? true
    }

    /// The temporary names beside destinations that unfinished tasks write (all are in memory).
    private func liveDestinationTemporaries() -> Set<String> {
        var names = Set<String>()
        for session in journal.registry.all {
            session.locked {
                for entry in session.tasks.values where !entry.record.isCompleted && entry.record.destination != nil {
                    names.insert(TaskFiles.temporaryName(for: entry.record))
                }
            }
        }
        return names
    }

    /// Removes the regular files of a directory that `orphan` picks.
    private func sweep(_ path: String, where orphan: (Int32, String) -> Bool) {
        let dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirfd >= 0 else { return }
        defer { close(dirfd) }
        for name in DataLayout.entries(of: path) where TaskFiles.isRegularFile(dirfd, name) && orphan(dirfd, name) {
            if unlinkat(dirfd, name, 0) == 0 { logger.info("removed an orphan file", metadata: ["path": .string(path + "/" + name)]) }
        }
    }

    /// Walks a tree from a directory descriptor without following symlinks (each level is opened
    /// with `O_NOFOLLOW` relative to its parent, so nothing leads out of it), removing the regular
    /// files `orphan` picks, until `budget` entries have been looked at.
    private func sweepTree(_ dirfd: Int32, budget: inout Int, where orphan: (Int32, String) -> Bool) {
        let fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let dir = fdopendir(fd) else { return }
        defer { closedir(dir) }
        var subdirectories: [String] = []
        while budget > 0, let entry = readdir(dir) {
            budget -= 1
            let name = DataLayout.entryName(entry)
            if name == "." || name == ".." { continue }
            var st = stat()
            guard fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
            if st.st_mode & S_IFMT == S_IFDIR {
                subdirectories.append(name)
            } else if st.st_mode & S_IFMT == S_IFREG, orphan(fd, name), unlinkat(fd, name, 0) == 0 {
                logger.info("removed an orphan temporary file", metadata: ["name": .string(name)])
            }
        }
        for name in subdirectories where budget > 0 {
            let child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { continue }
            sweepTree(child, budget: &budget, where: orphan)
            close(child)
        }
    }

    private static func isRegularFile(_ dirfd: Int32, _ name: String) -> Bool {
        var st = stat()
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mode & S_IFMT == S_IFREG
    }

    /// Whether the file's status (content, name) last changed before `time`.
    private static func changed(_ dirfd: Int32, _ name: String, before time: Timestamp) -> Bool {
        var st = stat()
        guard fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return Int64(st.st_ctim.tv_sec) * 1000 + Int64(st.st_ctim.tv_nsec) / 1_000_000 < time.milliseconds
    }
}
