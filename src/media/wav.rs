//! OGG/Opus (Telegram voice notes, WhatsApp-style recordings) decoded to 16 kHz mono 16-bit PCM
//! WAV, for speech-to-text servers that take only WAV (whisper.cpp's server without ffmpeg).
//! Pure Rust (`opus-pure`): Opus decodes straight to 16 kHz, so no resampling is needed; stereo
//! is mixed down.
//!
//! It streams packet by packet to the output file (memory stays one packet), stops past
//! [`MAX_SECS`] of audio, and must never panic on a malformed file: errors end as
//! [`MediaError::Unreadable`] and the partial output is removed.

use super::error::MediaError;
use opus_pure::{OggOpusReader, OggPacket, Trim, MAX_PACKET_SAMPLES};
use std::io::{BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// The rate whisper models take.
pub const RATE: u32 = 16_000;
/// Longest audio converted (one hour: 115 MB of WAV).
pub const MAX_SECS: u64 = 3600;
const HEADER: usize = 44;

/// Decodes the OGG/Opus file `src` into the WAV file `dst` (on the blocking pool) and returns
/// the length of the audio in samples at [`RATE`].
pub async fn ogg_opus_to_wav(src: &Path, dst: &Path) -> Result<u64, MediaError> {
    let (src, dst) = (src.to_path_buf(), dst.to_path_buf());
    let task = tokio::task::spawn_blocking(move || {
        let done = convert(&src, &dst);
        if done.is_err() {
            let _ = std::fs::remove_file(&dst);
        }
        done
    });
    match task.await {
        Ok(done) => done,
        Err(_) => Err(MediaError::Unreadable { reason: "the Opus decoder failed on it".into() }),
    }
}

fn convert(src: &Path, dst: &Path) -> Result<u64, MediaError> {
    let opus =
        |e: opus_pure::Error| MediaError::Unreadable { reason: format!("it is not a readable OGG/Opus file ({e})") };
    let io = |e: std::io::Error| MediaError::Unreadable { reason: format!("converting it to WAV failed ({e})") };
    let input = std::fs::File::open(src).map_err(io)?;
    let mut reader = OggOpusReader::new(BufReader::new(input)).map_err(opus)?;
    let head = reader.head().clone();
    let channels = usize::from(head.channel_count).max(1);
    let mut decoder = head.decoder(RATE as i32).map_err(opus)?;
    let mut trim = Trim::new(&head, RATE as i32, channels).map_err(opus)?;
    let mut block = vec![0.0f32; MAX_PACKET_SAMPLES * channels];
    let mut packet = OggPacket::default();
    let mut out = BufWriter::new(std::fs::File::create(dst).map_err(io)?);
    out.write_all(&header(0)).map_err(io)?;
    let (mut samples, max) = (0u64, MAX_SECS * u64::from(RATE));
    let mut pcm = Vec::with_capacity(MAX_PACKET_SAMPLES * 2);
    while reader.read_packet_into(&mut packet).map_err(opus)? {
        let n = decoder.decode(&packet.data, MAX_PACKET_SAMPLES, &mut block).map_err(opus)?;
        let kept = trim.keep(&packet, &block[..n * channels]);
        pcm.clear();
        for frame in kept.chunks_exact(channels) {
            let mono = frame.iter().sum::<f32>() / channels as f32;
            pcm.extend_from_slice(&to_i16(mono).to_le_bytes());
        }
        samples += (kept.len() / channels) as u64;
        if samples > max {
            return Err(MediaError::Unreadable {
                reason: format!("it is longer than {} min, too long to convert", MAX_SECS / 60),
            });
        }
        out.write_all(&pcm).map_err(io)?;
    }
    let mut file = out.into_inner().map_err(|e| io(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(&header(samples * 2)).map_err(io)?;
    file.sync_all().map_err(io)?;
    Ok(samples)
}

fn to_i16(sample: f32) -> i16 {
    (sample.clamp(-1.0, 1.0) * 32767.0).round() as i16
}

/// The 44-byte RIFF/WAVE header of 16-bit mono PCM at [`RATE`] with `data` bytes of samples.
fn header(data: u64) -> [u8; HEADER] {
    let data = u32::try_from(data).unwrap_or(u32::MAX - 36);
    let mut h = [0u8; HEADER];
    let mut put = |at: usize, bytes: &[u8]| h[at..at + bytes.len()].copy_from_slice(bytes);
    put(0, b"RIFF");
    put(4, &(36 + data).to_le_bytes());
    put(8, b"WAVE");
    put(12, b"fmt ");
    put(16, &16u32.to_le_bytes());
    put(20, &1u16.to_le_bytes()); // PCM
    put(22, &1u16.to_le_bytes()); // mono
    put(24, &RATE.to_le_bytes());
    put(28, &(RATE * 2).to_le_bytes()); // bytes per second
    put(32, &2u16.to_le_bytes()); // block align
    put(34, &16u16.to_le_bytes()); // bits per sample
    put(36, b"data");
    put(40, &data.to_le_bytes());
    h
}
