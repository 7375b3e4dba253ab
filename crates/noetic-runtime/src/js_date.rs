//! Timestamps as JS writes them (`new Date().toISOString()`), for values users compare with ones JS made.

use std::time::{SystemTime, UNIX_EPOCH};

const MS_PER_DAY: i64 = 86_400_000;

/// The current time as `Date.now()` reads it: whole milliseconds since the epoch.
pub fn now_millis() -> f64 {
  SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1000.0).floor()
}

/// The current time as `toISOString` prints it, such as `2026-01-31T09:05:03.007Z`.
pub fn iso_now() -> String {
  let ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
    Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
    Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
  };
  iso_from_millis(ms)
}

/// `new Date(ms).toISOString()`: four-digit years from 0 to 9999, signed six-digit years outside them.
pub fn iso_from_millis(ms: i64) -> String {
  let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
  let in_day = ms.rem_euclid(MS_PER_DAY);
  let (hour, minute, second, milli) = (in_day / 3_600_000, in_day / 60_000 % 60, in_day / 1000 % 60, in_day % 1000);
  let year = match year {
    0..=9999 => format!("{year:04}"),
    _ if year < 0 => format!("-{:06}", -year),
    _ => format!("+{year:06}"),
  };
  format!("{year}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
  let z = days + 719_468;
  let era = z.div_euclid(146_097);
  let day_of_era = z.rem_euclid(146_097);
  let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
  let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  let shifted_month = (5 * day_of_year + 2) / 153;
  let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
  let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 };
  let year = year_of_era + era * 400 + i64::from(month <= 2);
  (year, month, day)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn prints_what_to_iso_string_prints() {
    // Each pair checked against node: new Date(ms).toISOString().
    for (ms, text) in [
      (0, "1970-01-01T00:00:00.000Z"),
      (1_700_000_000_123, "2023-11-14T22:13:20.123Z"),
      (951_782_400_000, "2000-02-29T00:00:00.000Z"),
      (-1, "1969-12-31T23:59:59.999Z"),
      (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
      (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
      (-62_198_755_200_000, "-000001-01-01T00:00:00.000Z"),
    ] {
      assert_eq!(iso_from_millis(ms), text, "{ms}");
    }
  }

  #[test]
  fn now_is_well_formed() {
    let now = iso_now();
    assert_eq!(now.len(), 24, "{now}");
    assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
  }
}
