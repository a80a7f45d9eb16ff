//! `now`: the current date and time in the user's time zone (or one the model names).

use crate::tools::{parse_args, Tool, ToolCtx, ToolError, ToolSpec};
use async_trait::async_trait;
use chrono::Utc;
use chrono_tz::Tz;
use serde::Deserialize;
use serde_json::{json, Value};

pub struct Now {
    spec: ToolSpec,
}

impl Now {
    pub fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: "now".into(),
                description: "Current date, time and weekday in the user's time zone, or in the IANA time zone given."
                    .into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "timezone": {"type": "string", "description": "IANA zone such as Europe/Berlin; default: the user's"}
                    },
                    "additionalProperties": false
                }),
                read_only: true,
            },
        }
    }
}

impl Default for Now {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Args {
    timezone: Option<String>,
}

/// Formats `at` in `zone` the way the tool reports it.
pub fn describe(at: chrono::DateTime<Utc>, zone: &str) -> Result<String, ToolError> {
    let tz: Tz = zone.parse().map_err(|_| {
        ToolError::InvalidArgs(format!("unknown time zone `{zone}`; use an IANA name such as Europe/Berlin"))
    })?;
    let local = at.with_timezone(&tz);
    Ok(format!("{} ({}, {})", local.to_rfc3339_opts(chrono::SecondsFormat::Secs, false), local.format("%A"), tz.name()))
}

#[async_trait]
impl Tool for Now {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let args: Args = parse_args(args)?;
        let zone = args.timezone.unwrap_or_else(|| ctx.user.timezone.clone());
        describe(Utc::now(), &zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn formats_in_zone() {
        let at = Utc.with_ymd_and_hms(2026, 3, 29, 0, 30, 0).unwrap();
        let cases = [
            ("UTC", "2026-03-29T00:30:00+00:00 (Sunday, UTC)"),
            ("Europe/Berlin", "2026-03-29T01:30:00+01:00 (Sunday, Europe/Berlin)"),
            ("America/New_York", "2026-03-28T20:30:00-04:00 (Saturday, America/New_York)"),
            ("America/Sao_Paulo", "2026-03-28T21:30:00-03:00 (Saturday, America/Sao_Paulo)"),
        ];
        for (zone, want) in cases {
            assert_eq!(describe(at, zone).unwrap(), want);
        }
        assert!(describe(at, "Mars/Olympus").is_err());
    }
}
