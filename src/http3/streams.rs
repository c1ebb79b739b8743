//! The peer's unidirectional streams (RFC 9114, section 6.2): each begins
//! with its type. The control stream carries SETTINGS first and then
//! GOAWAY (and frames pace has no use for); QPACK's encoder stream may set
//! the dynamic table's capacity only to 0, the capacity pace allows; the
//! decoder stream's acknowledgements concern a dynamic table pace never
//! fills, and are read and dropped, as are streams of unknown types and
//! reserved ones. Each critical stream may be opened once.

use quinn_proto::{ReadError, RecvStream};

use super::error::{
    H3Error, CLOSED_CRITICAL_STREAM, FRAME_UNEXPECTED, ID_ERROR, MISSING_SETTINGS,
    QPACK_ENCODER_STREAM_ERROR, STREAM_CREATION_ERROR,
};
use super::frame::{self, FrameReader, Piece};
use super::varint;

/// The largest control frame pace reads (SETTINGS are a few bytes).
const MAX_CONTROL_FRAME: usize = 16 * 1024;

/// What the peer's control stream said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Its SETTINGS: `SETTINGS_MAX_FIELD_SECTION_SIZE`, when given (the
    /// largest field section it takes; unlimited otherwise).
    Settings { max_field_section_size: Option<u64> },
    /// GOAWAY: the first request stream it will not process (from a
    /// server; requests on that stream and above go again elsewhere).
    GoAway(u64),
}

/// The peer's unidirectional streams of one connection.
#[derive(Debug, Default)]
pub struct PeerStreams {
    /// The peer is a client (pace serves): its control stream may carry
    /// MAX_PUSH_ID, which a server must not send.
    client: bool,
    control_opened: bool,
    encoder_opened: bool,
    decoder_opened: bool,
}

/// One unidirectional stream of the peer.
#[derive(Debug)]
pub struct PeerStream {
    /// The stream type read so far (a varint, at most 8 bytes).
    kind: Vec<u8>,
    role: Option<Role>,
}

#[derive(Debug)]
enum Role {
    Control {
        frames: FrameReader,
        settings_seen: bool,
        last_goaway: Option<u64>,
    },
    QpackEncoder,
    /// Its acknowledgements concern a dynamic table pace never fills.
    QpackDecoder,
    /// Streams of types pace ignores.
    Ignored,
}

impl PeerStream {
    /// A control or QPACK stream: the peer must not end it (RFC 9114,
    /// section 6.2.1: `H3_CLOSED_CRITICAL_STREAM`).
    pub fn is_critical(&self) -> bool {
        matches!(self.role, Some(Role::Control { .. } | Role::QpackEncoder | Role::QpackDecoder))
    }
}

impl PeerStreams {
    /// The streams of a client, as the server reads them.
    pub fn of_client() -> PeerStreams {
        PeerStreams { client: true, ..PeerStreams::default() }
    }

    /// A stream the peer opened.
    pub fn open(&mut self) -> PeerStream {
        PeerStream { kind: Vec::with_capacity(8), role: None }
    }

    /// Reads what arrived on `stream` from quinn-proto's `recv` and feeds
    /// it (see [`PeerStreams::feed`]); a critical stream the peer ends or
    /// resets is the connection's error.
    pub fn read(
        &mut self,
        stream: &mut PeerStream,
        mut recv: RecvStream<'_>,
        control: &mut dyn FnMut(Control),
    ) -> Result<(), H3Error> {
        let Ok(mut chunks) = recv.read(true) else { return Ok(()) };
        let peer = if self.client { "client" } else { "server" };
        let read = loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if let Err(e) = self.feed(stream, &chunk.bytes, control) {
                        break Err(e);
                    }
                }
                Ok(None) | Err(ReadError::Reset(_)) if stream.is_critical() => {
                    break Err(H3Error::new(
                        CLOSED_CRITICAL_STREAM,
                        format!("the {peer} closed its control or QPACK stream"),
                    ));
                }
                Ok(None) | Err(ReadError::Reset(_)) | Err(ReadError::Blocked) => break Ok(()),
            }
        };
        let _ = chunks.finalize();
        read
    }

    /// Bytes of `stream`, in order; what its control stream says goes to
    /// `control`. Err: a connection error (the caller closes with its code).
    pub fn feed(
        &mut self,
        stream: &mut PeerStream,
        mut bytes: &[u8],
        control: &mut dyn FnMut(Control),
    ) -> Result<(), H3Error> {
        if stream.role.is_none() {
            while stream.role.is_none() {
                let Some((&byte, rest)) = bytes.split_first() else { return Ok(()) };
                bytes = rest;
                stream.kind.push(byte);
                if let Some((kind, _)) = varint::decode(&stream.kind) {
                    stream.role = Some(self.role(kind)?);
                }
            }
        }
        let client = self.client;
        match stream.role.as_mut() {
            Some(Role::Control { frames, settings_seen, last_goaway }) => {
                frames.feed(bytes, &mut |piece| {
                    let (kind, payload) = match piece {
                        Piece::Frame { kind, payload } => (kind, payload),
                        Piece::Data(_) => (frame::DATA, &[][..]),
                    };
                    if !*settings_seen && kind != frame::SETTINGS {
                        return Err(H3Error::new(
                            MISSING_SETTINGS,
                            format!("the control stream began with a frame of type 0x{kind:x}, not SETTINGS"),
                        ));
                    }
                    match kind {
                        frame::SETTINGS if *settings_seen => {
                            Err(H3Error::new(FRAME_UNEXPECTED, "a second SETTINGS frame"))
                        }
                        frame::SETTINGS => {
                            *settings_seen = true;
                            let settings = frame::parse_settings(payload)?;
                            let max_field_section_size = settings
                                .iter()
                                .find(|&&(id, _)| id == frame::SETTINGS_MAX_FIELD_SECTION_SIZE)
                                .map(|&(_, value)| value);
                            control(Control::Settings { max_field_section_size });
                            Ok(())
                        }
                        frame::GOAWAY => {
                            let id = frame::parse_goaway(payload)?;
                            if last_goaway.is_some_and(|last| id > last) {
                                return Err(H3Error::new(ID_ERROR, "a GOAWAY whose id grew"));
                            }
                            *last_goaway = Some(id);
                            control(Control::GoAway(id));
                            Ok(())
                        }
                        // A client's limit on the push ids a server may use
                        // (section 7.2.7): pace's server never pushes.
                        frame::MAX_PUSH_ID if client => Ok(()),
                        // Push is never allowed, so there is none to cancel;
                        // a client's frame and request frames do not belong here.
                        frame::CANCEL_PUSH => Err(H3Error::new(ID_ERROR, "CANCEL_PUSH, though pace allows no push")),
                        kind => Err(H3Error::new(
                            FRAME_UNEXPECTED,
                            format!("a frame of type 0x{kind:x} on the control stream"),
                        )),
                    }
                })
            }
            Some(Role::QpackEncoder) => match bytes.iter().find(|&&b| b != 0x20) {
                // 0x20: Set Dynamic Table Capacity 0.
                None => Ok(()),
                Some(_) => Err(H3Error::new(
                    QPACK_ENCODER_STREAM_ERROR,
                    "QPACK's encoder stream uses a dynamic table, whose capacity pace set to 0",
                )),
            },
            Some(Role::QpackDecoder | Role::Ignored) | None => Ok(()),
        }
    }

    fn role(&mut self, kind: u64) -> Result<Role, H3Error> {
        let once = |opened: &mut bool, what: &str| {
            if std::mem::replace(opened, true) {
                Err(H3Error::new(STREAM_CREATION_ERROR, format!("a second {what} stream")))
            } else {
                Ok(())
            }
        };
        Ok(match kind {
            frame::CONTROL_STREAM => {
                once(&mut self.control_opened, "control")?;
                Role::Control {
                    frames: FrameReader::new(MAX_CONTROL_FRAME),
                    settings_seen: false,
                    last_goaway: None,
                }
            }
            frame::QPACK_ENCODER_STREAM => {
                once(&mut self.encoder_opened, "QPACK encoder")?;
                Role::QpackEncoder
            }
            frame::QPACK_DECODER_STREAM => {
                once(&mut self.decoder_opened, "QPACK decoder")?;
                Role::QpackDecoder
            }
            frame::PUSH_STREAM => {
                return Err(H3Error::new(ID_ERROR, "a push stream, though pace allows no push"))
            }
            _ => Role::Ignored,
        })
    }
}

/// The start of pace's own control stream: its type and an empty SETTINGS
/// (a QPACK dynamic table capacity of 0, no blocked streams and no limit
/// on field sections are the defaults).
pub fn control_stream_preface() -> Vec<u8> {
    let mut out = Vec::new();
    varint::encode(frame::CONTROL_STREAM, &mut out);
    frame::frame(frame::SETTINGS, &[], &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the peer's streams say, fed byte by byte, each stream's bytes
    /// in turn; or the first error.
    fn feed(streams: &[Vec<u8>]) -> Result<Vec<Control>, H3Error> {
        let mut peer = PeerStreams::default();
        let mut said = Vec::new();
        for bytes in streams {
            let mut stream = peer.open();
            for byte in bytes.chunks(1) {
                peer.feed(&mut stream, byte, &mut |c| said.push(c))?;
            }
        }
        Ok(said)
    }

    #[test]
    fn a_client_may_send_max_push_id_and_a_server_may_not() {
        let stream = control(&[(frame::SETTINGS, vec![]), (frame::MAX_PUSH_ID, vec![0x08])]);
        let mut client = PeerStreams::of_client();
        let mut opened = client.open();
        assert!(client.feed(&mut opened, &stream, &mut |_| {}).is_ok());
        let e = feed(&[stream]).unwrap_err();
        assert_eq!(e.code, FRAME_UNEXPECTED, "{e}");
    }

    fn control(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
        let mut out = vec![0x00];
        for (kind, payload) in frames {
            frame::frame(*kind, payload, &mut out);
        }
        out
    }

    fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(id, value) in pairs {
            varint::encode(id, &mut out);
            varint::encode(value, &mut out);
        }
        out
    }

    #[test]
    fn a_servers_streams_say_their_settings_and_goaways() {
        let said = feed(&[
            control(&[
                (frame::SETTINGS, settings(&[(0x6, 8192), (0x21, 1)])),
                (0x21, b"unknown".to_vec()),
                (frame::GOAWAY, vec![0x08]),
                (frame::GOAWAY, vec![0x04]),
            ]),
            vec![0x02, 0x20],             // encoder stream: capacity 0
            vec![0x03, 0x81, 0x40, 0x01], // decoder stream: dropped
            vec![0x21, 0xff, 0xff],       // a reserved type: dropped
        ])
        .unwrap();
        assert_eq!(
            said,
            [
                Control::Settings { max_field_section_size: Some(8192) },
                Control::GoAway(8),
                Control::GoAway(4)
            ]
        );
        let mut preface = control_stream_preface();
        preface.extend(control(&[(frame::GOAWAY, vec![0x00])]).split_off(1));
        assert_eq!(
            feed(&[preface]).unwrap(),
            [Control::Settings { max_field_section_size: None }, Control::GoAway(0)]
        );
    }

    #[test]
    fn what_a_peers_streams_get_wrong_has_its_code() {
        let ok = (frame::SETTINGS, Vec::new());
        let cases: [(Vec<Vec<u8>>, u64); 9] = [
            (vec![control(&[(frame::GOAWAY, vec![0])])], MISSING_SETTINGS),
            (vec![control(&[ok.clone(), ok.clone()])], FRAME_UNEXPECTED),
            (vec![control(&[ok.clone(), (frame::HEADERS, vec![0, 0])])], FRAME_UNEXPECTED),
            (vec![control(&[ok.clone(), (frame::DATA, vec![1])])], FRAME_UNEXPECTED),
            (
                vec![control(&[ok.clone(), (frame::GOAWAY, vec![4]), (frame::GOAWAY, vec![8])])],
                ID_ERROR,
            ),
            (
                vec![control(std::slice::from_ref(&ok)), control(std::slice::from_ref(&ok))],
                STREAM_CREATION_ERROR,
            ),
            (vec![vec![0x02, 0x3f, 0x01]], QPACK_ENCODER_STREAM_ERROR),
            (vec![vec![0x03], vec![0x03]], STREAM_CREATION_ERROR),
            (vec![vec![0x01, 0x00]], ID_ERROR),
        ];
        for (streams, code) in cases {
            let e = feed(&streams).unwrap_err();
            assert_eq!(e.code, code, "{streams:02x?}: {e}");
        }
    }
}
