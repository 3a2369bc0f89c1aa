import FuzzSupport
import JSON

/// The JSON parser on arbitrary bytes. Property: a document it accepts, written back out by
/// JSONWriter, parses again to an equal value (the writer's output is what clients receive, and
/// configuration and headers are echoed through it).
@main enum FuzzJSON {
    static func main() {
        fuzzMain { input in
            guard let value = try? JSONParser.parse(Array(input)) else { return }
            var writer = JSONWriter()
            writer.value(value)
            do throws(JSONParser.Failure) {
                let again = try JSONParser.parse(writer.bytes)
                fuzzCheck(again == value, "written JSON parses to a different value")
            } catch {
                fuzzCheck(false, "written JSON does not parse: \(error.message) at \(error.offset)")
            }
        }
    }
}
