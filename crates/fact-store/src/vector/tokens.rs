//! [`TokenVectors`]: a fact's token vectors (one per token of its text, from a model's
//! last hidden state) in the compact form every store keeps, and the similarity a
//! late-interaction scorer reads from them.
//!
//! # Bytes
//!
//! `[encoding: u8][dimension: u16 LE][tokens: u16 LE]`, then one record per token:
//!
//! - [`TokenEncoding::Int8`]: the token's scale as an `f32` (LE), then `dimension` signed
//!   bytes, the unit vector's values divided by the scale (the largest magnitude maps to
//!   127): `4 + dimension` bytes per token.
//! - [`TokenEncoding::Binary`]: the scale as an `f32` (the mean magnitude of the unit
//!   vector's values), then one sign bit per value, least significant bit first:
//!   `4 + ⌈dimension / 8⌉` bytes per token.
//!
//! A value decodes to `scale × code` (`code` the signed byte, or ±1). The similarity of a
//! query token (a float unit vector) to a stored token is the dot product with the decoded
//! values: for `Int8` within about 1% of the cosine, for `Binary` an estimate whose ranking
//! keeps most of the cosine's (`docs/benchmarks.md` has the figures).

use std::fmt;

use super::kernel::dot;

/// The eight signs a byte of binary codes stands for, least significant bit first.
static SIGNS: [[f32; 8]; 256] = signs();

// The loops bound `byte` below 256 and `bit` below 8: the indexes cannot leave the table.
#[allow(clippy::indexing_slicing)]
const fn signs() -> [[f32; 8]; 256] {
    let mut table = [[0.0; 8]; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut bit = 0;
        while bit < 8 {
            table[byte][bit] = if byte >> bit & 1 == 1 { 1.0 } else { -1.0 };
            bit += 1;
        }
        byte += 1;
    }
    table
}

/// The bytes before the first token record.
const HEADER: usize = 5;
/// The most tokens one fact's vectors hold (a model's sequence is far shorter).
pub const MAX_TOKENS: usize = u16::MAX as usize;

/// How token vectors are encoded (see the module's byte layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenEncoding {
    /// A scale and one signed byte per value: `4 + dimension` bytes per token.
    Int8,
    /// A scale and one sign bit per value: `4 + ⌈dimension / 8⌉` bytes per token.
    Binary,
}

impl TokenEncoding {
    fn tag(self) -> u8 {
        match self {
            TokenEncoding::Int8 => 1,
            TokenEncoding::Binary => 2,
        }
    }

    fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(TokenEncoding::Int8),
            2 => Some(TokenEncoding::Binary),
            _ => None,
        }
    }

    /// The bytes of one token's record at `dimension`.
    #[must_use]
    pub fn token_bytes(self, dimension: usize) -> usize {
        4 + match self {
            TokenEncoding::Int8 => dimension,
            TokenEncoding::Binary => dimension.div_ceil(8),
        }
    }
}

/// Why token vectors cannot be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid token vectors: {reason}")]
pub struct InvalidTokenVectors {
    reason: String,
}

impl InvalidTokenVectors {
    fn new(reason: impl Into<String>) -> Self {
        InvalidTokenVectors {
            reason: reason.into(),
        }
    }

    /// What is wrong.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// The token vectors of one fact's text by one model, encoded compactly.
///
/// Made from the model's per-token output ([`encode`](Self::encode): row-major, one row of
/// `dimension` values per token, each row scaled to unit length first), or read back from
/// the bytes a store kept ([`from_bytes`](Self::from_bytes), which checks them). The
/// stores keep them per model identity beside the fact's embedding
/// ([`FactVectors::put_token_vectors`](crate::FactVectors::put_token_vectors)).
///
/// ```
/// use fact_store::{TokenEncoding, TokenVectors};
///
/// // Two tokens of dimension 4.
/// let values = [1.0, 0.0, 0.0, 0.0, 0.0, 0.6, 0.8, 0.0];
/// let tokens = TokenVectors::encode(TokenEncoding::Int8, 4, &values)?;
/// assert_eq!((tokens.len(), tokens.dimension()), (2, 4));
/// assert_eq!(tokens.as_bytes().len(), 5 + 2 * (4 + 4));
///
/// // The query token [0, 0, 1, 0] is nearest the second token: cosine 0.8.
/// let best = tokens.max_similarity(&[0.0, 0.0, 1.0, 0.0]).unwrap();
/// assert!((best - 0.8).abs() < 0.01);
///
/// let again = TokenVectors::from_bytes(tokens.as_bytes().to_vec())?;
/// assert_eq!(again, tokens);
/// # Ok::<(), fact_store::InvalidTokenVectors>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct TokenVectors {
    encoding: TokenEncoding,
    dimension: usize,
    tokens: usize,
    bytes: Vec<u8>,
}

impl fmt::Debug for TokenVectors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenVectors")
            .field("encoding", &self.encoding)
            .field("dimension", &self.dimension)
            .field("tokens", &self.tokens)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl TokenVectors {
    /// Encodes `values`, `dimension` values per token, row-major.
    ///
    /// # Errors
    ///
    /// [`InvalidTokenVectors`] when `dimension` is 0 or above `u16::MAX`, `values` is
    /// empty, not a whole number of tokens or more than [`MAX_TOKENS`] of them, or a token
    /// holds a value that is not finite or is all zeros.
    pub fn encode(
        encoding: TokenEncoding,
        dimension: usize,
        values: &[f32],
    ) -> Result<Self, InvalidTokenVectors> {
        let dim = u16::try_from(dimension)
            .ok()
            .filter(|&d| d > 0)
            .ok_or_else(|| {
                InvalidTokenVectors::new(format!("a dimension of {dimension} is not 1 to 65535"))
            })?;
        if values.is_empty() {
            return Err(InvalidTokenVectors::new("no tokens"));
        }
        if !values.len().is_multiple_of(dimension) {
            return Err(InvalidTokenVectors::new(format!(
                "{} values are not a whole number of {dimension}-value tokens",
                values.len()
            )));
        }
        let tokens = values.len() / dimension;
        let count = u16::try_from(tokens).map_err(|_| {
            InvalidTokenVectors::new(format!("{tokens} tokens, more than {MAX_TOKENS}"))
        })?;
        let mut bytes = Vec::with_capacity(HEADER + tokens * encoding.token_bytes(dimension));
        bytes.push(encoding.tag());
        bytes.extend_from_slice(&dim.to_le_bytes());
        bytes.extend_from_slice(&count.to_le_bytes());
        let mut unit = vec![0.0_f32; dimension];
        for (index, row) in values.chunks_exact(dimension).enumerate() {
            if row.iter().any(|x| !x.is_finite()) {
                return Err(InvalidTokenVectors::new(format!(
                    "token {index} holds a value that is not finite"
                )));
            }
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm == 0.0 || !norm.is_finite() {
                return Err(InvalidTokenVectors::new(format!(
                    "token {index} is all zeros"
                )));
            }
            for (u, x) in unit.iter_mut().zip(row) {
                *u = x / norm;
            }
            match encoding {
                TokenEncoding::Int8 => {
                    let largest = unit.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
                    let scale = largest / 127.0;
                    bytes.extend_from_slice(&scale.to_le_bytes());
                    // |x / scale| ≤ 127: the cast cannot saturate.
                    #[allow(clippy::cast_possible_truncation)]
                    bytes.extend(unit.iter().map(|x| (x / scale).round() as i8 as u8));
                }
                TokenEncoding::Binary => {
                    #[allow(clippy::cast_precision_loss)]
                    let scale = unit.iter().map(|x| x.abs()).sum::<f32>() / dimension as f32;
                    bytes.extend_from_slice(&scale.to_le_bytes());
                    for chunk in unit.chunks(8) {
                        let mut byte = 0_u8;
                        for (bit, x) in chunk.iter().enumerate() {
                            if *x >= 0.0 {
                                byte |= 1 << bit;
                            }
                        }
                        bytes.push(byte);
                    }
                }
            }
        }
        Ok(TokenVectors {
            encoding,
            dimension,
            tokens,
            bytes,
        })
    }

    /// Reads token vectors back from the bytes [`as_bytes`](Self::as_bytes) gave.
    ///
    /// # Errors
    ///
    /// [`InvalidTokenVectors`] when the bytes do not hold a known encoding, a dimension of
    /// at least 1, at least one token and exactly the records the header announces, or a
    /// token's scale is not finite and positive.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, InvalidTokenVectors> {
        let header = bytes
            .get(..HEADER)
            .ok_or_else(|| InvalidTokenVectors::new("shorter than the 5-byte header"))?;
        let [tag, d0, d1, t0, t1] = <[u8; HEADER]>::try_from(header)
            .map_err(|_| InvalidTokenVectors::new("shorter than the 5-byte header"))?;
        let encoding = TokenEncoding::from_tag(tag)
            .ok_or_else(|| InvalidTokenVectors::new(format!("unknown encoding {tag}")))?;
        let dimension = usize::from(u16::from_le_bytes([d0, d1]));
        let tokens = usize::from(u16::from_le_bytes([t0, t1]));
        if dimension == 0 || tokens == 0 {
            return Err(InvalidTokenVectors::new(format!(
                "{tokens} tokens of dimension {dimension}"
            )));
        }
        let expected = HEADER + tokens * encoding.token_bytes(dimension);
        if bytes.len() != expected {
            return Err(InvalidTokenVectors::new(format!(
                "{} bytes where the header announces {expected}",
                bytes.len()
            )));
        }
        let vectors = TokenVectors {
            encoding,
            dimension,
            tokens,
            bytes,
        };
        if let Some(index) = (0..tokens).find(|&i| {
            let scale = vectors.record(i).map_or(f32::NAN, |(scale, _)| scale);
            !(scale.is_finite() && scale > 0.0)
        }) {
            return Err(InvalidTokenVectors::new(format!(
                "token {index} has no finite positive scale"
            )));
        }
        Ok(vectors)
    }

    /// The encoded bytes, as a store keeps them.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The encoded bytes, taken (what a SQL store writes).
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// The encoding.
    #[must_use]
    pub fn encoding(&self) -> TokenEncoding {
        self.encoding
    }

    /// The values per token.
    #[must_use]
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// How many tokens.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tokens
    }

    /// Whether there are no tokens (never, for a value made by `encode` or `from_bytes`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tokens == 0
    }

    /// Token `index`'s scale and codes.
    fn record(&self, index: usize) -> Option<(f32, &[u8])> {
        let size = self.encoding.token_bytes(self.dimension);
        let start = HEADER + index.checked_mul(size)?;
        let record = self.bytes.get(start..start.checked_add(size)?)?;
        let (scale, codes) = record.split_first_chunk::<4>()?;
        Some((f32::from_le_bytes(*scale), codes))
    }

    /// The decoded values of every token, row-major (`len() × dimension()` values).
    #[must_use]
    pub fn decode(&self) -> Vec<f32> {
        let mut out = Vec::new();
        self.decode_into(&mut out);
        out
    }

    /// [`decode`](Self::decode) into `out` (cleared first), so a scorer reuses one buffer.
    pub fn decode_into(&self, out: &mut Vec<f32>) {
        out.clear();
        out.reserve(self.tokens * self.dimension);
        for index in 0..self.tokens {
            let Some((scale, codes)) = self.record(index) else {
                break;
            };
            match self.encoding {
                TokenEncoding::Int8 => {
                    out.extend(codes.iter().map(|&c| f32::from(c.cast_signed()) * scale));
                }
                TokenEncoding::Binary => {
                    let start = out.len();
                    for &byte in codes {
                        let signs = SIGNS.get(usize::from(byte)).unwrap_or(&[1.0; 8]);
                        out.extend(signs.iter().map(|sign| sign * scale));
                    }
                    // The last byte's unused bits.
                    out.truncate(start + self.dimension);
                }
            }
        }
    }

    /// The largest similarity of `query` (one token's unit vector, `dimension()` values)
    /// to any of these tokens; `None` when `query` has another length.
    #[must_use]
    pub fn max_similarity(&self, query: &[f32]) -> Option<f32> {
        self.max_sim(query, &mut Vec::new())
    }

    /// Late interaction (MaxSim): for each query token (`query` holds them row-major,
    /// `dimension()` values each, unit length), its largest similarity to any of these
    /// tokens, summed over the query tokens. `None` when `query` is empty or not a whole
    /// number of tokens of this dimension. `scratch` is a buffer the call may reuse.
    #[must_use]
    pub fn max_sim(&self, query: &[f32], scratch: &mut Vec<f32>) -> Option<f32> {
        if query.is_empty() || !query.len().is_multiple_of(self.dimension) {
            return None;
        }
        self.decode_into(scratch);
        let mut total = 0.0_f32;
        for q in query.chunks_exact(self.dimension) {
            let best = scratch
                .chunks_exact(self.dimension)
                .map(|token| dot(q, token))
                .fold(f32::NEG_INFINITY, f32::max);
            total += best;
        }
        total.is_finite().then_some(total)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use proptest::prelude::*;

    fn unit(values: &[f32]) -> Vec<f32> {
        let norm = values.iter().map(|x| x * x).sum::<f32>().sqrt();
        values.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        let int8 = TokenEncoding::Int8;
        assert!(TokenVectors::encode(int8, 0, &[1.0]).is_err());
        assert!(
            TokenVectors::encode(int8, 2, &[])
                .unwrap_err()
                .reason()
                .contains("no tokens")
        );
        assert!(TokenVectors::encode(int8, 2, &[1.0, 0.0, 1.0]).is_err());
        assert!(TokenVectors::encode(int8, 2, &[1.0, f32::NAN]).is_err());
        assert!(
            TokenVectors::encode(int8, 2, &[0.0, 0.0])
                .unwrap_err()
                .reason()
                .contains("zeros")
        );
        assert!(TokenVectors::encode(int8, 70_000, &[1.0]).is_err());
        for bytes in [
            vec![],
            vec![1, 2, 0],
            vec![9, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0],
            vec![1, 0, 0, 1, 0],
        ] {
            assert!(TokenVectors::from_bytes(bytes).is_err());
        }
        // A record too short for its header, and a zero scale.
        let good = TokenVectors::encode(int8, 2, &[1.0, 0.0]).unwrap();
        let mut short = good.as_bytes().to_vec();
        short.pop();
        assert!(TokenVectors::from_bytes(short).is_err());
        let mut zero = good.as_bytes().to_vec();
        zero[HEADER..HEADER + 4].copy_from_slice(&0.0_f32.to_le_bytes());
        assert!(TokenVectors::from_bytes(zero).is_err());
    }

    #[test]
    fn a_query_of_another_length_has_no_similarity() {
        let tokens = TokenVectors::encode(TokenEncoding::Binary, 3, &[1.0, 0.0, 0.0]).unwrap();
        assert_eq!(tokens.max_similarity(&[1.0, 0.0]), None);
        assert!(tokens.max_similarity(&[1.0, 0.0, 0.0]).unwrap() > 0.0);
    }

    proptest! {
        /// Bytes round-trip, and int8 keeps every similarity within 0.02 of the cosine.
        #[test]
        fn int8_keeps_the_cosine_and_bytes_round_trip(
            rows in prop::collection::vec(prop::collection::vec(-1.0f32..1.0, 16), 1..6),
            query in prop::collection::vec(-1.0f32..1.0, 16),
            binary in any::<bool>(),
        ) {
            prop_assume!(rows.iter().all(|r| r.iter().any(|x| x.abs() > 1e-3)));
            prop_assume!(query.iter().any(|x| x.abs() > 1e-3));
            let encoding = if binary { TokenEncoding::Binary } else { TokenEncoding::Int8 };
            let values: Vec<f32> = rows.concat();
            let tokens = TokenVectors::encode(encoding, 16, &values).unwrap();
            prop_assert_eq!(tokens.len(), rows.len());
            prop_assert_eq!(tokens.as_bytes().len(), HEADER + rows.len() * encoding.token_bytes(16));
            let again = TokenVectors::from_bytes(tokens.as_bytes().to_vec()).unwrap();
            prop_assert_eq!(&again, &tokens);
            let query = unit(&query);
            let exact = rows.iter().map(|r| dot(&query, &unit(r))).fold(f32::MIN, f32::max);
            let found = tokens.max_similarity(&query).unwrap();
            if !binary {
                prop_assert!((found - exact).abs() < 0.02, "{found} vs {exact}");
            }
            prop_assert!(found.is_finite());
        }

        /// Any bytes read back are either refused or decode to the announced size.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(tokens) = TokenVectors::from_bytes(bytes) {
                prop_assert_eq!(tokens.decode().len(), tokens.len() * tokens.dimension());
            }
        }
    }
}
