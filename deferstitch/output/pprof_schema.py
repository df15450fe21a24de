"""google/pprof's profile.proto, declared in code for the protobuf package (no protoc needed).

    message Profile { repeated ValueType sample_type = 1; repeated Sample sample = 2;
      repeated Mapping mapping = 3; repeated Location location = 4; repeated Function function = 5;
      repeated string string_table = 6; int64 drop_frames = 7; int64 keep_frames = 8;
      int64 time_nanos = 9; int64 duration_nanos = 10; ValueType period_type = 11;
      int64 period = 12; repeated int64 comment = 13; int64 default_sample_type = 14; }
    message ValueType { int64 type = 1; int64 unit = 2; }
    message Sample { repeated uint64 location_id = 1; repeated int64 value = 2; repeated Label label = 3; }
    message Label { int64 key = 1; int64 str = 2; int64 num = 3; int64 num_unit = 4; }
    message Mapping { uint64 id = 1; uint64 memory_start = 2; uint64 memory_limit = 3;
      uint64 file_offset = 4; int64 filename = 5; int64 build_id = 6; bool has_functions = 7;
      bool has_filenames = 8; bool has_line_numbers = 9; bool has_inline_frames = 10; }
    message Location { uint64 id = 1; uint64 mapping_id = 2; uint64 address = 3;
      repeated Line line = 4; bool is_folded = 5; }
    message Line { uint64 function_id = 1; int64 line = 2; int64 column = 3; }
    message Function { uint64 id = 1; int64 name = 2; int64 system_name = 3; int64 filename = 4;
      int64 start_line = 5; }
"""
_MESSAGES = {
    "Profile": [("sample_type", 1, "ValueType", True), ("sample", 2, "Sample", True),
                ("mapping", 3, "Mapping", True), ("location", 4, "Location", True),
                ("function", 5, "Function", True), ("string_table", 6, "string", True),
                ("drop_frames", 7, "int64", False), ("keep_frames", 8, "int64", False),
                ("time_nanos", 9, "int64", False), ("duration_nanos", 10, "int64", False),
                ("period_type", 11, "ValueType", False), ("period", 12, "int64", False),
                ("comment", 13, "int64", True), ("default_sample_type", 14, "int64", False)],
    "ValueType": [("type", 1, "int64", False), ("unit", 2, "int64", False)],
    "Sample": [("location_id", 1, "uint64", True), ("value", 2, "int64", True),
               ("label", 3, "Label", True)],
    "Label": [("key", 1, "int64", False), ("str", 2, "int64", False), ("num", 3, "int64", False),
              ("num_unit", 4, "int64", False)],
    "Mapping": [("id", 1, "uint64", False), ("memory_start", 2, "uint64", False),
                ("memory_limit", 3, "uint64", False), ("file_offset", 4, "uint64", False),
                ("filename", 5, "int64", False), ("build_id", 6, "int64", False),
                ("has_functions", 7, "bool", False), ("has_filenames", 8, "bool", False),
                ("has_line_numbers", 9, "bool", False), ("has_inline_frames", 10, "bool", False)],
    "Location": [("id", 1, "uint64", False), ("mapping_id", 2, "uint64", False),
                 ("address", 3, "uint64", False), ("line", 4, "Line", True),
                 ("is_folded", 5, "bool", False)],
    "Line": [("function_id", 1, "uint64", False), ("line", 2, "int64", False),
             ("column", 3, "int64", False)],
    "Function": [("id", 1, "uint64", False), ("name", 2, "int64", False),
                 ("system_name", 3, "int64", False), ("filename", 4, "int64", False),
                 ("start_line", 5, "int64", False)],
}

_classes = None


def messages():
    """{name: message class} for perftools.profiles (built once)."""
    global _classes
    if _classes is not None:
        return _classes
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    scalar = {"int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64, "string": F.TYPE_STRING,
              "bool": F.TYPE_BOOL}
    fdp = descriptor_pb2.FileDescriptorProto(name="deferstitch_profile.proto",
                                             package="perftools.profiles", syntax="proto3")
    for name, fields in _MESSAGES.items():
        m = fdp.message_type.add(name=name)
        for fname, num, typ, repeated in fields:
            fd = m.field.add(name=fname, number=num,
                             label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if typ in scalar:
                fd.type = scalar[typ]
            else:
                fd.type = F.TYPE_MESSAGE
                fd.type_name = ".perftools.profiles." + typ
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    out = {}
    for name in _MESSAGES:
        desc = pool.FindMessageTypeByName("perftools.profiles." + name)
        if hasattr(message_factory, "GetMessageClass"):
            out[name] = message_factory.GetMessageClass(desc)
        else:                                        # protobuf < 4.21
            out[name] = message_factory.MessageFactory(pool).GetPrototype(desc)
    _classes = out
    return out
