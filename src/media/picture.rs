//! Photos for vision models: a saved image decoded under limits (size and memory), turned
//! upright (EXIF orientation), shrunk so its longest side fits `[media] image_max_side`, and
//! encoded again (JPEG, or PNG when it has transparency) as base64 for an [`Image`] part. Also
//! the width and height from the header alone, for models that cannot see.
//!
//! Decoding runs on the blocking pool; a broken or hostile file must end as an error, never a
//! panic of the caller or an allocation past the limits.

use super::error::MediaError;
use crate::llm::Image;
use base64::Engine as _;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits};
use std::io::Cursor;
use std::path::{Path, PathBuf};

/// Widest and tallest image decoded at all.
const MAX_SIDE: u32 = 12_000;
/// Most memory one decode may take.
const MAX_ALLOC: u64 = 256 * 1024 * 1024;
const JPEG_QUALITY: u8 = 85;

/// An image ready for a vision model.
#[derive(Clone, Debug)]
pub struct Shrunk {
    pub image: Image,
    /// The original's size, upright.
    pub width: u32,
    pub height: u32,
    /// The size sent to the model.
    pub sent_width: u32,
    pub sent_height: u32,
}

/// Decodes, shrinks and encodes the image at `path` (on the blocking pool).
pub async fn shrink(path: &Path, max_side: u32) -> Result<Shrunk, MediaError> {
    let path = path.to_path_buf();
    blocking(move || shrink_now(&path, max_side)).await
}

/// The width and height the image's header states (nothing is decoded), upright.
pub async fn dimensions(path: &Path) -> Result<(u32, u32), MediaError> {
    let path: PathBuf = path.to_path_buf();
    blocking(move || {
        let mut decoder = reader(&path)?.into_decoder().map_err(unreadable)?;
        let (w, h) = decoder.dimensions();
        let turned = decoder.orientation().map(swaps_sides).unwrap_or(false);
        Ok(if turned { (h, w) } else { (w, h) })
    })
    .await
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MediaError> + Send + 'static,
) -> Result<T, MediaError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => Err(MediaError::Unreadable { reason: "the image decoder failed on it".into() }),
        Err(_) => Err(MediaError::Unreadable { reason: "reading it was cancelled".into() }),
    }
}

fn reader(path: &Path) -> Result<ImageReader<std::io::BufReader<std::fs::File>>, MediaError> {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_ALLOC);
    let mut r = ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|e| MediaError::Unreadable { reason: format!("it could not be opened ({e})") })?;
    r.limits(limits);
    Ok(r)
}

fn shrink_now(path: &Path, max_side: u32) -> Result<Shrunk, MediaError> {
    let mut decoder = reader(path)?.into_decoder().map_err(unreadable)?;
    let orientation = decoder.orientation().ok();
    let mut img = DynamicImage::from_decoder(decoder).map_err(unreadable)?;
    if let Some(o) = orientation {
        img.apply_orientation(o);
    }
    let (width, height) = (img.width(), img.height());
    if width.max(height) > max_side {
        img = img.resize(max_side, max_side, image::imageops::FilterType::Triangle);
    }
    let (sent_width, sent_height) = (img.width(), img.height());
    let mut out = Cursor::new(Vec::new());
    let mime = if is_transparent(&img) {
        let encoder = image::codecs::png::PngEncoder::new(&mut out);
        DynamicImage::ImageRgba8(img.into_rgba8()).write_with_encoder(encoder).map_err(unreadable)?;
        "image/png"
    } else {
        let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
        DynamicImage::ImageRgb8(img.into_rgb8()).write_with_encoder(encoder).map_err(unreadable)?;
        "image/jpeg"
    };
    let data = base64::engine::general_purpose::STANDARD.encode(out.get_ref());
    Ok(Shrunk { image: Image { mime: mime.into(), data }, width, height, sent_width, sent_height })
}

/// Has an alpha channel that is used (a GIF decodes to RGBA even when fully opaque).
fn is_transparent(img: &DynamicImage) -> bool {
    match img.as_rgba8() {
        Some(rgba) => rgba.pixels().any(|p| p.0[3] < 255),
        None => img.color().has_alpha(),
    }
}

fn swaps_sides(o: image::metadata::Orientation) -> bool {
    use image::metadata::Orientation::*;
    matches!(o, Rotate90 | Rotate270 | Rotate90FlipH | Rotate270FlipH)
}

fn unreadable(e: image::ImageError) -> MediaError {
    let reason = match e {
        image::ImageError::Limits(_) => {
            format!("it is too large to decode (over {MAX_SIDE} pixels a side or {} MB of memory)", MAX_ALLOC >> 20)
        }
        image::ImageError::Unsupported(u) => format!("its format is not supported ({u})"),
        other => other.to_string(),
    };
    MediaError::Unreadable { reason }
}
