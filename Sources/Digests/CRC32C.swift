import CCRC32C

/// CRC-32C (Castagnoli): the checksum GCS declares in `x-goog-hash`. By the CPU's CRC32
/// instruction where it has one (SSE4.2, ARMv8 CRC), else by slicing-by-8 tables; see CCRC32C.
public enum CRC32C {
    /// Continues a CRC-32C (Castagnoli; initial value 0, as `crc32c` packages compute it: update(0, "123456789") == 0xE3069283).
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        crc32c_update(crc, bytes.baseAddress, bytes.count)
    }

    /// The table path alone, whatever the CPU: the fallback, which tests hold the fast path to.
    static func softwareUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        crc32c_update_software(crc, bytes.baseAddress, bytes.count)
    }

    /// Whether `update` runs on the CPU's instruction on this machine.
    static var usesHardware: Bool { crc32c_uses_hardware() != 0 }
}
