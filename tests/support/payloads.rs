//! Real file payloads made in tests (a PNG, a PDF with text, a deterministic blob behind any
//! magic bytes), their SHA-256, reading a channel's download to the end, and a file to send.

use butler::channel::{Attachment, ChannelError, FileSource, OutFile};
use futures::StreamExt;
use sha2::{Digest, Sha256};

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A real PNG (a gradient), `w` x `h`.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A one-page PDF saying `text`, with a correct cross-reference table.
pub fn pdf(text: &str) -> Vec<u8> {
    let stream = format!("BT /F1 18 Tf 72 720 Td ({text}) Tj ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!("<< /Length {} >>\nstream\n{stream}\nendstream", stream.len()),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for o in offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

/// A deterministic pseudo-random blob of `n` bytes behind `head` (bytes that look like what
/// they are not).
pub fn blob(head: &[u8], n: usize) -> Vec<u8> {
    let mut out = head.to_vec();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Reads a download to the end: (bytes, the largest piece read at once, announced size).
pub async fn read(source: &dyn FileSource, a: &Attachment) -> Result<(Vec<u8>, usize, Option<u64>), ChannelError> {
    let mut d = source.open(a).await?;
    let (mut bytes, mut largest) = (Vec::new(), 0);
    while let Some(piece) = d.body.next().await {
        let piece = piece?;
        largest = largest.max(piece.len());
        bytes.extend_from_slice(&piece);
    }
    Ok((bytes, largest, d.size))
}

/// Writes `bytes` to `out-<name>` in `dir` (a stored name unlike the one shown); the `OutFile`
/// a message carries for it.
pub fn out_file(dir: &std::path::Path, name: &str, mime: &str, bytes: &[u8], photo: bool) -> OutFile {
    let path = dir.join(format!("out-{name}"));
    std::fs::write(&path, bytes).unwrap();
    OutFile { path: path.display().to_string(), name: name.into(), mime: mime.into(), size: bytes.len() as u64, photo }
}
