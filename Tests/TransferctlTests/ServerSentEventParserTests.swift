import Foundation
import Testing
@testable import transferctl

/// The event-stream reader: events come out whole however the bytes were cut on the way.
struct ServerSentEventParserTests {
    static let stream = """
        : keep-alive

        id: 7
        event: task.completed
        data: {"seq":7}

        event: task.progress
        data: {"seq":0,
        data: "more":1}

        id: 8\r
        event: session.invalidated\r
        data: {}\r
        \r

        """

    static let expected = [
        ServerSentEvent(id: "7", type: "task.completed", data: #"{"seq":7}"#),
        ServerSentEvent(id: nil, type: "task.progress", data: "{\"seq\":0,\n\"more\":1}"),
        ServerSentEvent(id: "8", type: "session.invalidated", data: "{}"),
    ]

    @Test func readsEventsCommentsAndLineEndings() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(Data(Self.stream.utf8)) == Self.expected)
    }

    @Test(arguments: [1, 2, 3, 7, 64])
    func readsTheSameEventsFromAnyCuts(size: Int) {
        var parser = ServerSentEventParser()
        let bytes = Array(Self.stream.utf8)
        var events: [ServerSentEvent] = []
        for start in stride(from: 0, to: bytes.count, by: size) {
            events += parser.feed(Data(bytes[start..<min(start + size, bytes.count)]))
        }
        #expect(events == Self.expected)
    }

    @Test func anEventWithoutItsBlankLineIsNotYetOut() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(Data("id: 1\nevent: task.created\ndata: {}\n".utf8)).isEmpty)
        #expect(parser.feed(Data("\n".utf8)) == [ServerSentEvent(id: "1", type: "task.created", data: "{}")])
    }
}

/// The units of the progress line.
struct FormatTests {
    @Test func bytesInBinaryUnits() {
        #expect(Format.bytes(0) == "0 B")
        #expect(Format.bytes(1023) == "1023 B")
        #expect(Format.bytes(1536) == "1.5 KiB")
        #expect(Format.bytes(30_000_000) == "28.6 MiB")
    }

    @Test func durationsAsClockTimes() {
        #expect(Format.duration(4.2) == "0:05")
        #expect(Format.duration(3725) == "1:02:05")
        #expect(Format.duration(.infinity) == "--:--")
    }
}
