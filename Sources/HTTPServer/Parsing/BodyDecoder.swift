/// Decodes a request body as it arrives, framed by Content-Length or chunked transfer coding
/// (RFC 9112 §6.3, §7.1). Body bytes are handed on as slices of the input, never copied.
public struct BodyDecoder: Sendable {
    private enum State: Sendable {
        case length(remaining: Int)
        case chunkSize(value: Int, digits: Int)
        case chunkSizeWhitespace(size: Int, length: Int)
        case chunkExtension(size: Int, length: Int)
        case chunkSizeLF(size: Int)
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
        case trailer(lineLength: Int)
        case trailerLF(lineLength: Int)
        case done
    }

    private var state: State
    private var trailerBytes = 0
    private let maxTrailerBytes: Int
    /// Body bytes delivered so far.
    public private(set) var received = 0

    public init(_ framing: BodyFraming, maxTrailerBytes: Int = 32 * 1024) {
        switch framing {
        case .length(let n): state = n == 0 ? .done : .length(remaining: n)
        case .chunked: state = .chunkSize(value: 0, digits: 0)
        }
        self.maxTrailerBytes = maxTrailerBytes
    }

    public var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes as much of `input` as belongs to this body, calling `deliver` with each run of body
    /// bytes. Returns how many input bytes were consumed; the rest belong to the next request.
    public mutating func decode(
        _ input: UnsafeRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) throws(HTTPProblem) -> Void
    ) throws(HTTPProblem) -> Int {
        var i = 0
        while i < input.count {
            switch state {
            case .done:
                return i
            case .length(let remaining):
                let n = min(remaining, input.count - i)
                received += n
                try deliver(UnsafeRawBufferPointer(rebasing: input[i..<i + n]))
                i += n
                state = remaining == n ? .done : .length(remaining: remaining - n)
            case .chunkData(let remaining):
                let n = min(remaining, input.count - i)
                received += n
                try deliver(UnsafeRawBufferPointer(rebasing: input[i..<i + n]))
                i += n
                state = remaining == n ? .chunkDataCR : .chunkData(remaining: remaining - n)
            default:
                try step(input[i])
                i += 1
            }
        }
        return i
    }

    /// One byte of chunk framing.
    private mutating func step(_ c: UInt8) throws(HTTPProblem) {
        switch state {
        case .chunkSize(let value, let digits):
            if let h = CharacterClass.hexValue(c) {
                // 15 hex digits stay below 2^60: no overflow, and far beyond any size we accept.
                guard digits < 15 else { throw .bad("chunk size too large") }
                state = .chunkSize(value: value << 4 | h, digits: digits + 1)
            } else if digits == 0 {
                throw .bad("malformed chunk size")
            } else if c == 0x0D {
                state = .chunkSizeLF(size: value)
            } else if c == 0x3B {
                state = .chunkExtension(size: value, length: 1)
            } else if CharacterClass.isWhitespace(c) {
                state = .chunkSizeWhitespace(size: value, length: 1)
            } else {
                throw .bad("malformed chunk size")
            }
        case .chunkSizeWhitespace(let size, let length):
            // RFC 9112 §7.1.1: only BWS ";" may follow the size. Taking anything after a space as
            // an extension read `5 5` as 5, where another parser in the path might read 0x55.
            if c == 0x3B {
                state = .chunkExtension(size: size, length: length + 1)
            } else if c == 0x0D {
                state = .chunkSizeLF(size: size)
            } else if CharacterClass.isWhitespace(c) && length < 4096 {
                state = .chunkSizeWhitespace(size: size, length: length + 1)
            } else {
                throw .bad("malformed chunk size")
            }
        case .chunkExtension(let size, let length):
            if c == 0x0D {
                state = .chunkSizeLF(size: size)
            } else {
                guard length < 4096, CharacterClass.isFieldValueChar(c) else { throw .bad("malformed chunk extension") }
                state = .chunkExtension(size: size, length: length + 1)
            }
        case .chunkSizeLF(let size):
            guard c == 0x0A else { throw .bad("chunk size line must end in CRLF") }
            state = size == 0 ? .trailer(lineLength: 0) : .chunkData(remaining: size)
        case .chunkDataCR:
            guard c == 0x0D else { throw .bad("chunk data longer than its size") }
            state = .chunkDataLF
        case .chunkDataLF:
            guard c == 0x0A else { throw .bad("chunk data must end in CRLF") }
            state = .chunkSize(value: 0, digits: 0)
        case .trailer(let lineLength):
            trailerBytes += 1
            guard trailerBytes <= maxTrailerBytes else {
                throw HTTPProblem(431, "header_fields_too_large", "the trailer section is too large")
            }
            if c == 0x0D {
                state = .trailerLF(lineLength: lineLength)
            } else {
                guard CharacterClass.isFieldValueChar(c) else { throw .bad("invalid character in a trailer") }
                state = .trailer(lineLength: lineLength + 1)
            }
        case .trailerLF(let lineLength):
            guard c == 0x0A else { throw .bad("bare CR in the trailer section") }
            state = lineLength == 0 ? .done : .trailer(lineLength: 0)
        case .length, .chunkData, .done:
            preconditionFailure("handled in decode")
        }
    }
}
