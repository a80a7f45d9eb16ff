//! Photos: shrunk for vision models and decodable again, described for models without vision,
//! broken ones a note (never a panic), the sniffed type over the claimed one.

use super::{attachment, gif, jpeg, media, platform, png, prepare};
use crate::config::MediaConfig;
use base64::Engine as _;
use butler_channel::MediaKind;

fn decode(img: &crate::llm::Image) -> image::DynamicImage {
    let bytes = base64::engine::general_purpose::STANDARD.decode(&img.data).unwrap();
    let format = match img.mime.as_str() {
        "image/jpeg" => image::ImageFormat::Jpeg,
        "image/png" => image::ImageFormat::Png,
        other => panic!("unexpected {other}"),
    };
    image::load_from_memory_with_format(&bytes, format).unwrap()
}

#[tokio::test]
async fn a_large_photo_is_shrunk_to_the_longest_side_and_decodes_again() {
    let (files, source) = platform().await;
    let (big, alpha) = (jpeg(4000, 3000), png(300, 200, true));
    let big_len = big.len() as u64;
    files.bytes("big", big);
    files.bytes("alpha", alpha);
    files.bytes("gif", gif(64, 32));
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let atts = [
        attachment(MediaKind::Image, "big", None, Some("image/jpeg")),
        attachment(MediaKind::Document, "alpha", Some("logo.png"), Some("image/png")),
        attachment(MediaKind::Image, "gif", Some("dance.gif"), None),
    ];
    let out = prepare(&m, ws.path(), "e1", &atts, true).await;
    assert_eq!(out.images.len(), 3, "{}", out.text);
    assert!(out.notes.is_empty(), "{:?}", out.notes);

    let shrunk = decode(&out.images[0]);
    assert_eq!(out.images[0].mime, "image/jpeg");
    assert_eq!((shrunk.width(), shrunk.height()), (1568, 1176));
    let logo = decode(&out.images[1]);
    assert_eq!(out.images[1].mime, "image/png", "transparency is kept");
    assert_eq!((logo.width(), logo.height()), (300, 200), "small images are not resized");
    assert!(logo.color().has_alpha());
    assert_eq!(out.images[2].mime, "image/jpeg");
    assert_eq!((decode(&out.images[2]).width(), decode(&out.images[2]).height()), (64, 32));

    let id = |i| crate::media::stable_id("e1", i);
    let blocks: Vec<&str> = out.text.split("\n\n").collect();
    assert_eq!(
        blocks[0],
        format!(
            "[photo, 4000×3000 JPEG, {}, saved as media/{}-photo-1.jpg; the image is attached (shrunk to 1568×1176)]",
            crate::media::words::size(big_len),
            id(0)
        )
    );
    assert!(blocks[1].starts_with("[image \"logo.png\", 300×200 PNG, "), "{}", blocks[1]);
    assert!(
        blocks[1].ends_with(&format!("saved as media/{}-logo.png; the image is attached]", id(1))),
        "{}",
        blocks[1]
    );
    assert!(blocks[2].starts_with("[photo \"dance.gif\", 64×32 GIF, "), "{}", blocks[2]);
}

#[tokio::test]
async fn without_vision_the_photo_is_described_and_the_person_told() {
    let (files, source) = platform().await;
    files.bytes("p", jpeg(4000, 3000));
    files.bytes("q", png(20, 10, false));
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let atts =
        [attachment(MediaKind::Image, "p", Some("IMG_1.jpg"), None), attachment(MediaKind::Image, "q", None, None)];
    let out = prepare(&m, ws.path(), "e1", &atts, false).await;
    assert!(out.images.is_empty());
    let id = crate::media::stable_id("e1", 0);
    let first = out.text.split("\n\n").next().unwrap();
    assert!(first.starts_with("[photo \"IMG_1.jpg\", 4000×3000 JPEG, "), "{first}");
    assert!(
        first.ends_with(&format!(
            "saved as media/{id}-IMG_1.jpg — this model cannot see images; tell the person you cannot see it]"
        )),
        "{first}"
    );
    assert_eq!(
        out.notes,
        vec!["I can't see images with this model, so I only know a photo was sent ([llm] vision is off).".to_string()],
        "one note for two photos"
    );
}

#[tokio::test]
async fn broken_and_mislabelled_images_become_notes_never_panics() {
    let (files, source) = platform().await;
    let mut cut = png(200, 200, false);
    cut.truncate(cut.len() / 2);
    files.bytes("cut", cut);
    files.bytes("random", (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect());
    files.bytes("pdf", super::pdf(&[&["not a photo"]]));
    let mut huge = png(1, 1, false);
    // A PNG header claiming 100000×100000 pixels (past the decode limits).
    huge[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    huge[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    files.bytes("huge", huge);
    let ws = tempfile::tempdir().unwrap();
    let m = media(MediaConfig::default(), source);
    let atts = [
        attachment(MediaKind::Image, "cut", Some("x.png"), Some("image/png")),
        attachment(MediaKind::Image, "random", Some("y.png"), Some("image/png")),
        attachment(MediaKind::Image, "pdf", Some("photo.jpg"), Some("image/jpeg")),
        attachment(MediaKind::Image, "huge", Some("z.png"), None),
    ];
    let out = prepare(&m, ws.path(), "e1", &atts, true).await;
    assert!(out.images.is_empty(), "{}", out.text);
    let blocks: Vec<&str> = out.text.split("\n\n").collect();
    assert!(blocks[0].starts_with("[photo \"x.png\" could not be read: "), "{}", blocks[0]);
    assert!(
        blocks[1].starts_with("[file \"y.png\", application/octet-stream, 4.0 KB, saved as "),
        "not an image: {}",
        blocks[1]
    );
    assert!(blocks[1].ends_with("; not read]"), "{}", blocks[1]);
    assert!(blocks[2].starts_with("[file \"photo.jpg\", PDF, 1 page, "), "a PDF named .jpg is a PDF: {}", blocks[2]);
    assert!(blocks[2].contains("not a photo"));
    assert!(blocks[3].starts_with("[photo \"z.png\" could not be read: "), "{}", blocks[3]);
    assert!(out.notes.iter().any(|n| n.starts_with("I couldn't read the photo \"x.png\": ")), "{:?}", out.notes);
    assert!(out.notes.iter().any(|n| n.starts_with("I couldn't read the photo \"z.png\": ")), "{:?}", out.notes);
}
