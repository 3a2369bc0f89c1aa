import Digests
import Glibc
import HTTPServer

/// Resume data (PRODUCT.md "Tasks"): a readable, signed token — base64 of JSON naming the URL,
/// the validator (ETag or Last-Modified), the offset and the partial file — from which a new
/// download task continues where a cancelled or failed one stopped. The signature (HMAC-SHA256
/// with a key kept in the data directory) makes a tampered token `resume_data_invalid`.
struct ResumeData: Sendable, Equatable {
    var url: String
    var validator: String
    var offset: Int64
    /// The partial file, which the resuming task takes over.
    var partial: String
    var destination: String?
    /// `session/task` the data came from.
    var origin: String

    /// The token: base64 of `{"version":1,…,"signature":"<hex>"}`.
    func token(key: [UInt8]) -> String {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        writeFields(into: &json)
        json.key("signature"); json.string(ResumeData.sign(payload: payloadBytes, key: key))
        json.endObject()
        return Base64.encode(json.bytes)
    }

    /// Reads and verifies a token; any flaw is the same refusal, so nothing is learned from which.
    static func parse(_ token: String, key: [UInt8]) throws(APIError) -> ResumeData {
        let invalid = APIError.invalid("resume_data", "is not resume data transferd issued, or was altered",
                                       code: "resume_data_invalid")
        guard let bytes = Base64.decode(token.trimmingCharacters()), let value = try? JSONParser.parse(bytes),
              value["version"]?.intValue == 1, let url = value["url"]?.stringValue,
              let validator = value["validator"]?.stringValue, let offset = value["offset"]?.intValue, offset >= 0,
              let partial = value["partial"]?.stringValue, let origin = value["origin"]?.stringValue,
              let signature = value["signature"]?.stringValue
        else { throw invalid }
        let data = ResumeData(url: url, validator: validator, offset: offset, partial: partial,
                              destination: value["destination"]?.stringValue, origin: origin)
        guard Authenticator.constantTimeEquals(Array(sign(payload: data.payloadBytes, key: key).utf8), Array(signature.utf8)) else {
            throw invalid
        }
        return data
    }

    private var payloadBytes: [UInt8] {
        var json = JSONWriter(capacity: 512)
        json.beginObject()
        writeFields(into: &json)
        json.endObject()
        return json.bytes
    }

    /// The signed fields, always in this order: the signature covers exactly these bytes.
    private func writeFields(into json: inout JSONWriter) {
        json.key("version"); json.int(1)
        json.key("url"); json.string(url)
        json.key("validator"); json.string(validator)
        json.key("offset"); json.int(offset)
        json.key("partial"); json.string(partial)
        json.key("destination"); json.optionalString(destination)
        json.key("origin"); json.string(origin)
    }

    private static func sign(payload: [UInt8], key: [UInt8]) -> String {
        SHA256Stream.hex(HMACSHA256.code(for: payload, key: key))
    }
}

/// The key resume data is signed with: 32 random bytes in `resume-key` in the data directory,
/// made at first start (mode 0600), so tokens stay valid across restarts.
enum ResumeKey {
    static func load(directory: String) throws(TaskFileError) -> [UInt8] {
        let path = directory + "/resume-key"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            var key = [UInt8](repeating: 0, count: 32)
            guard read(fd, &key, 32) == 32 else { throw TaskFileError(code: EIO, what: "\(path) is damaged") }
            return key
        }
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let temporary = path + ".part"
        let out = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard out >= 0 else { throw TaskFileError(code: errno, what: "cannot create \(path)") }
        let written = key.withUnsafeBytes { write(out, $0.baseAddress, 32) }
        let synced = fsync(out) == 0
        close(out)
        guard written == 32, synced, rename(temporary, path) == 0 else { throw TaskFileError(code: errno, what: "cannot write \(path)") }
        return key
    }
}
