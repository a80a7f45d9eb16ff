//! Tests of the media component.
