// CRC-32C (Castagnoli, the iSCSI/ext4/GCS checksum) by the CPU's CRC32 instruction when it has
// one, else by slicing-by-8 tables. In C because the instruction is reached through compiler
// intrinsics under a per-function target attribute, which Swift cannot express, and the choice
// is made once at run time so the binary needs no -msse4.2 and still runs on any x86-64.
#ifndef TRANSFERD_CRC32C_H
#define TRANSFERD_CRC32C_H
#include <stddef.h>
#include <stdint.h>

/// Continues `crc` (0 to start; the result of a previous call to go on) over `length` bytes, by
/// the fastest path this CPU offers.
uint32_t crc32c_update(uint32_t crc, const void *bytes, size_t length);

/// The same by the portable tables alone: the fallback, and the reference the fast path is
/// tested against.
uint32_t crc32c_update_software(uint32_t crc, const void *bytes, size_t length);

/// 1 when crc32c_update uses the CPU's instruction, 0 when it falls back to the tables.
int crc32c_uses_hardware(void);

#endif
