/// Stops the run when a property a fuzz target checks does not hold. `fatalError` rather than
/// `precondition`, so the check survives every optimisation level and libFuzzer keeps the input.
public func fuzzCheck(_ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition { fatalError("fuzz property failed: \(message())", file: file, line: line) }
}
