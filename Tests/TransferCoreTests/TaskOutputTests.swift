import Glibc
import Testing
@testable import TransferCore

/// A task's output file: unnamed while it is written, named only when something must find it
/// again, published under its final name; and groups of outputs committed together.
struct TaskOutputTests {
    /// A scratch directory, removed after `body`.
    private func inDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/transferd-output-XXXXXX".utf8CString)
        let directory = String(cString: mkdtemp(&template)!)
        defer { DataLayout.removeTree(directory) }
        try body(directory)
    }

    private func output(in directory: String, name: String = "file.bin", reopen: Bool = false) throws -> TaskOutput {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return try TaskOutput(OutputLocation(directoryFD: fd, directoryPath: directory, finalName: name,
                                             temporaryName: "." + name + ".part"), reopen: reopen)
    }

    private func write(_ output: TaskOutput, _ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(output.fd, $0.baseAddress, $0.count - 1) }
    }

    private func contents(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        let n = fread(&buffer, 1, 255, file)
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @Test func isUnnamedUntilPublishedThenReplacesTheFinalName() throws {
        try inDirectory { directory in
            #expect(contents(directory + "/file.bin") == nil)
            let first = try output(in: directory)
            #expect(first.isNew)
            write(first, "old")
            #expect(DataLayout.entries(of: directory).isEmpty)
            try first.publish()
            first.closeDirectory()
            #expect(contents(directory + "/file.bin") == "old")
            // A second one replaces the first atomically, by way of the temporary name.
            let second = try output(in: directory)
            write(second, "new")
            try second.publish()
            second.closeDirectory()
            #expect(DataLayout.entries(of: directory) == ["file.bin"])
            #expect(contents(directory + "/file.bin") == "new")
        }
    }

    @Test func keepNamesAFileWithBytesAndTheNextOpenContinuesIt() throws {
        try inDirectory { directory in
            let empty = try output(in: directory)
            empty.keep()
            #expect(DataLayout.entries(of: directory).isEmpty, "an empty file is not worth a name")
            let partial = try output(in: directory)
            write(partial, "part")
            partial.keep()
            #expect(DataLayout.entries(of: directory) == [".file.bin.part"])
            let continued = try output(in: directory, reopen: true)
            #expect(!continued.isNew)
            #expect(continued.existingSize == 4)
            lseek(continued.fd, 0, SEEK_END)
            write(continued, "ial")
            try continued.publish()
            continued.closeDirectory()
            #expect(DataLayout.entries(of: directory) == ["file.bin"])
            #expect(contents(directory + "/file.bin") == "partial")
        }
    }

    @Test func nameForRestartNamesOnceAndDiscardRemovesTheName() throws {
        try inDirectory { directory in
            let running = try output(in: directory)
            write(running, "abc")
            running.nameForRestart()
            running.nameForRestart()
            #expect(DataLayout.entries(of: directory) == [".file.bin.part"])
            running.discard()
            #expect(DataLayout.entries(of: directory).isEmpty)
        }
    }

    @Test func keepForResumeNamesAnUnnamedFile() throws {
        try inDirectory { directory in
            let cut = try output(in: directory)
            write(cut, "resume me")
            let path = cut.keepForResume(as: ".file.bin.resume")
            #expect(path == directory + "/.file.bin.resume")
            #expect(contents(directory + "/.file.bin.resume") == "resume me")
        }
    }

    @Test func aGroupReportsEachFileOnceAndAFailureOnlyForItsFile() throws {
        try inDirectory { directory in
            // The final name of one is a directory with something in it: it cannot be replaced.
            mkdir(directory + "/blocked.bin", 0o755)
            close(open(directory + "/blocked.bin/inside", O_CREAT | O_WRONLY, 0o644))
            let names = ["a.bin", "blocked.bin", "b.bin"]
            let outputs = try names.map { try output(in: directory, name: $0) }
            for (output, name) in zip(outputs, names) { write(output, name) }
            let reports = Reports()
            OutputCommitter.commitGroup(outputs.enumerated().map { i, output in
                (output, { error in reports.add(i, error) })
            })
            let results = reports.all
            #expect(results.map(\.0) == [0, 1, 2])
            #expect(results[0].1 == nil && results[2].1 == nil, "\(results.map { $0.1?.message ?? "ok" })")
            #expect(results[1].1 != nil)
            outputs[1].discard()
            #expect(contents(directory + "/a.bin") == "a.bin")
            #expect(contents(directory + "/b.bin") == "b.bin")
            #expect(Set(DataLayout.entries(of: directory)) == ["a.bin", "b.bin", "blocked.bin"])
        }
    }
}

private final class Reports: @unchecked Sendable {
    private var results: [(Int, TaskFileError?)] = []
    func add(_ index: Int, _ error: TaskFileError?) { results.append((index, error)) }
    var all: [(Int, TaskFileError?)] { results }
}
