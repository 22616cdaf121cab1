//! The hello world's type, as IDL: `module hello { struct Hello { @key long id; unsigned long count; string text; }; };`
use detpath_dds::cdr::{key_hash_from_payload, CdrReader, CdrWriter, TopicType, WireError};

#[derive(Clone, Debug, Default)]
pub struct Hello {
    pub id: i32,
    pub count: u32,
    pub text: String,
}

impl TopicType for Hello {
    const TYPE_NAME: &'static str = "hello::Hello";
    const KEYED: bool = true;
    const KEY_MAX_SIZE: Option<usize> = Some(4);
    fn serialize(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.id)?;
        w.u32(self.count)?;
        w.string(&self.text)
    }
    fn deserialize_into(&mut self, r: &mut CdrReader<'_>) -> Result<(), WireError> {
        (self.id, self.count, self.text) = (r.i32()?, r.u32()?, r.string()?.to_string());
        Ok(())
    }
    fn serialize_key(&self, w: &mut CdrWriter<'_, '_>) -> Result<(), WireError> {
        w.i32(self.id)
    }
    fn key_hash_of(payload: &[u8]) -> Option<[u8; 16]> {
        key_hash_from_payload(payload, Some(4), |r, w| w.i32(r.i32()?))
    }
}
