//! Hex text of bytes and of 64-bit words: how digests, keys and fixed-point words are written
//! in output files, journals and wire messages. One spelling everywhere: lowercase, two
//! digits a byte, sixteen a word (most significant first).

/// Bytes as lowercase hex.
pub fn bytes(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex as bytes, or why not.
pub fn parse_bytes(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "\"{}\" is not hex",
            text.chars().take(40).collect::<String>()
        ));
    }
    (0..text.len() / 2)
        .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}

/// 64-bit words as hex, 16 digits each.
pub fn words(w: &[u64]) -> String {
    w.iter().map(|w| format!("{w:016x}")).collect()
}

/// Exactly `len` words from their hex, or why not.
pub fn parse_words(text: &str, len: usize) -> Result<Vec<u64>, String> {
    if text.len() != 16 * len {
        return Err(format!(
            "{} hex digits where {len} words have {}",
            text.len(),
            16 * len
        ));
    }
    (0..len)
        .map(|k| u64::from_str_radix(&text[16 * k..16 * k + 16], 16).map_err(|e| e.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refusals() {
        assert_eq!(bytes(&[0, 1, 0xab, 0xff]), "0001abff");
        assert_eq!(parse_bytes("0001abff").unwrap(), vec![0, 1, 0xab, 0xff]);
        assert!(parse_bytes("abc").is_err());
        assert!(parse_bytes("zz").is_err());
        assert_eq!(words(&[1, u64::MAX]), "0000000000000001ffffffffffffffff");
        assert_eq!(
            parse_words("0000000000000001ffffffffffffffff", 2).unwrap(),
            vec![1, u64::MAX]
        );
        assert!(parse_words("0000000000000001", 2).is_err());
    }
}
