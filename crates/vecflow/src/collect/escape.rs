//! Datagram-supplied strings made safe for a terminal and for line-based parsers: control
//! characters (C0, DEL, C1), Unicode line and paragraph separators, bidirectional and
//! zero-width format characters and bytes that are not UTF-8 are written as escapes, and a
//! backslash as `\\`, so a datagram can neither forge an output line nor drive the terminal.

use std::fmt::Write;

/// True for characters that must not reach the output as they are.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// `bytes` as printable text: `\n`, `\r`, `\t`, and `\xNN` for other control characters and bytes that are not UTF-8,
/// `\u{NNNN}` for invisible Unicode, `\\` for a backslash, everything else as it is.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if hidden(c) && u32::from(c) < 0x100 => {
                    let _ = write!(out, "\\x{:02x}", u32::from(c));
                }
                c if hidden(c) => {
                    let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_invisible_and_invalid_bytes_are_escaped() {
        assert_eq!(escape(b"eth0"), "eth0");
        assert_eq!(escape("port é".as_bytes()), "port é");
        assert_eq!(escape(b"a\nagent 6.6.6.6\r\x1b[2J\x7f\t"), "a\\nagent 6.6.6.6\\r\\x1b[2J\\x7f\\t");
        assert_eq!(escape(b"\\x1b"), "\\\\x1b", "a literal backslash cannot pose as an escape");
        assert_eq!(escape("a\u{2028}b\u{202e}c\u{85}".as_bytes()), "a\\u{2028}b\\u{202e}c\\x85");
        assert_eq!(escape(b"\xff\xfeok\xc3"), "\\xff\\xfeok\\xc3");
    }
}
