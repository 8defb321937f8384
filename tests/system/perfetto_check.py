#!/usr/bin/python3
# tests/system/perfetto_check.py - read what `xfdr convert --output-format=perfetto` wrote the
# way Perfetto reads it, with independent tools, and check what a viewer relies on.
#
#   perfetto_check.py lines TRACE SCHEMA_DIR        check, then print one line per track and event
#   perfetto_check.py same TRACE SCHEMA_DIR LLVM    check, then compare the slices with
#                                                   llvm-xray's trace_event JSON (LLVM)
#
# Decoding: `protoc --decode` with tests/system/perfetto_subset.proto (Perfetto's field numbers)
# prints the packets; protobuf's own text parser (Debian's python3-protobuf) reads that text
# into messages of the same schema, refusing any field protoc printed by number (a field the
# schema does not have); compressed_packets are inflated with zlib, as trace_processor does,
# and decoded the same way.
# Checks: every packet on a sequence; interned names and annotation names defined on their
# sequence after it cleared its incremental state; each sequence's timestamps on clock 64,
# incremental, tied to BOOTTIME by a clock snapshot before its first event; every event on a
# described track (a thread's under its process's); times never going back on a track; every
# slice begun ended on its track, innermost first, ends carrying no name; a source location
# interned on its sequence and naming the event's function (shown as "src":"FILE:LINE" among
# the event's annotations).
# Lines:  P PID "NAME"  (a process)   T PID TID "NAME"  (a thread)
#         PT PID PPID ["CMDLINE"...]  (a process tree entry: the process's parent)
#         B|E|I PID TID|- NS "NAME" {ANNOTATIONS}  (an event; an end shows its begin's name; -
#         for the process's own track), then PACKETS N CHUNKS N PLAIN N.
import json, subprocess, sys, zlib
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

def fail(msg):
    print('ERROR: ' + msg)
    sys.exit(1)

SCHEMA_DIR, SCHEMA = sys.argv[3], 'perfetto_subset.proto'

def protoc(args, data=None):
    r = subprocess.run(['protoc', '-I', SCHEMA_DIR] + args + [SCHEMA], input=data,
                       capture_output=True)
    if r.returncode:
        fail('protoc %s: %s' % (' '.join(args), r.stderr.decode(errors='replace')))
    return r.stdout

fds = descriptor_pb2.FileDescriptorSet.FromString(protoc(['--descriptor_set_out=/dev/stdout']))
pool = descriptor_pool.DescriptorPool()
for f in fds.file:
    pool.Add(f)
desc = pool.FindMessageTypeByName('perfetto.protos.Trace')
try:
    Trace = message_factory.GetMessageClass(desc)
except AttributeError:
    Trace = message_factory.MessageFactory(pool).GetPrototype(desc)

def decode(raw):
    # protoc decodes with the schema; protobuf's own text parser reads what it printed, and
    # refuses a field the schema does not have (protoc prints those by number).
    t = Trace()
    text_format.Parse(protoc(['--decode=perfetto.protos.Trace'], raw).decode('utf-8'), t)
    return t

raw = open(sys.argv[2], 'rb').read()
outer = decode(raw)
packets, chunks, plain = [], 0, 0
for p in outer.packet:
    if p.HasField('compressed_packets'):
        if p.ListFields() != [(p.DESCRIPTOR.fields_by_name['compressed_packets'], p.compressed_packets)]:
            fail('a compressed packet with other fields')
        chunks += 1
        packets.extend(decode(zlib.decompress(p.compressed_packets)).packet)
    else:
        plain += 1
        packets.append(p)

def ann_value(a):
    kind = a.WhichOneof('value')
    if kind:
        v = getattr(a, kind)
        return '0x%x' % v if kind == 'pointer_value' else v
    if a.array_values:
        return [ann_value(x) for x in a.array_values]
    return {d.name: ann_value(d) for d in a.dict_entries}

seqs, tracks, stacks, last_ts, out = {}, {}, {}, {}, []
for p in packets:
    sid = p.trusted_packet_sequence_id
    if not sid:
        fail('a packet without trusted_packet_sequence_id')
    st = seqs.setdefault(sid, {'cleared': False, 'names': {}, 'ann': {}, 'src': {},
                               'clock': None, 'track': None, 'ts': None})
    if p.sequence_flags & 1:
        st.update(cleared=True, names={}, ann={}, src={}, ts=None, clock=None, track=None)
    if p.HasField('interned_data'):
        if not st['cleared']:
            fail('interned data before the sequence cleared its state')
        for n in p.interned_data.event_names:
            st['names'][n.iid] = n.name
        for n in p.interned_data.debug_annotation_names:
            st['ann'][n.iid] = n.name
        for n in p.interned_data.source_locations:
            st['src'][n.iid] = n
    if p.HasField('trace_packet_defaults'):
        d = p.trace_packet_defaults
        st['clock'] = d.timestamp_clock_id
        st['track'] = d.track_event_defaults.track_uuid
    kind = p.WhichOneof('data')
    if kind == 'track_descriptor':
        td = p.track_descriptor
        if td.uuid in tracks:
            fail('track %d described twice' % td.uuid)
        if td.HasField('process'):
            tracks[td.uuid] = ('P', td.process.pid, None)
            out.append('P %d %s' % (td.process.pid, json.dumps(td.process.process_name)))
        elif td.HasField('thread'):
            if tracks.get(td.parent_uuid, ('',))[0] != 'P':
                fail('thread track %d without its process track' % td.uuid)
            tracks[td.uuid] = ('T', td.thread.pid, td.thread.tid)
            out.append('T %d %d %s' % (td.thread.pid, td.thread.tid,
                                       json.dumps(td.thread.thread_name)))
        else:
            fail('a track that is neither a process nor a thread')
    elif kind == 'process_tree':
        for pr in p.process_tree.processes:
            out.append('PT %d %d %s' % (pr.pid, pr.ppid, json.dumps(list(pr.cmdline))))
    elif kind == 'clock_snapshot':
        c = {x.clock_id: x for x in p.clock_snapshot.clocks}
        if 64 not in c or not c[64].is_incremental or 6 not in c \
                or c[6].timestamp != c[64].timestamp:
            fail('a clock snapshot that does not tie clock 64 to BOOTTIME')
        st['ts'] = c[64].timestamp
    elif kind == 'track_event':
        te = p.track_event
        if st['clock'] != 64 or st['ts'] is None:
            fail('a track event before its clock (defaults %s, snapshot %s)' % (st['clock'], st['ts']))
        if p.HasField('timestamp_clock_id'):
            fail('a track event with its own clock')
        st['ts'] += p.timestamp
        ts = st['ts']
        uuid = te.track_uuid if te.HasField('track_uuid') else st['track']
        if uuid not in tracks:
            fail('an event on track %s, which has no descriptor' % uuid)
        _, pid, tid = tracks[uuid]
        tid = '-' if tid is None else tid
        if ts < last_ts.get(uuid, 0):
            fail('time goes back on track %d' % uuid)
        last_ts[uuid] = ts
        if te.WhichOneof('name_field') == 'name_iid':
            if te.name_iid not in st['names']:
                fail('name iid %d not interned on sequence %d' % (te.name_iid, sid))
            name = st['names'][te.name_iid]
        else:
            name = te.name
        args = {}
        for a in te.debug_annotations:
            if a.WhichOneof('name_field') == 'name_iid':
                if a.name_iid not in st['ann']:
                    fail('annotation iid %d not interned' % a.name_iid)
                key = st['ann'][a.name_iid]
            else:
                key = a.name
            args[key] = ann_value(a)
        if te.HasField('source_location_iid'):
            loc = st['src'].get(te.source_location_iid)
            if loc is None:
                fail('source location iid %d not interned on sequence %d'
                     % (te.source_location_iid, sid))
            if loc.function_name != name:
                fail('source location of %s names %s' % (name, loc.function_name))
            args['src'] = '%s:%d' % (loc.file_name, loc.line_number)
        stack = stacks.setdefault(uuid, [])
        if te.type == te.TYPE_SLICE_BEGIN:
            ph = 'B'
            stack.append(name)
        elif te.type == te.TYPE_SLICE_END:
            ph = 'E'
            if not stack:
                fail('an end without its begin on track %d' % uuid)
            if name:
                fail('an end with a name')
            name = stack.pop()
        elif te.type == te.TYPE_INSTANT:
            ph = 'I'
        else:
            fail('a track event of type %d' % te.type)
        out.append('%s %d %s %d %s %s' % (ph, pid, tid, ts, json.dumps(name),
                                          json.dumps(args, sort_keys=True, separators=(',', ':'))))
    elif kind:
        fail('a packet of %s' % kind)
for uuid, stack in stacks.items():
    if stack:
        fail('slices left open on track %d: %s' % (uuid, stack))

def slices(lines):
    """Per (pid, tid): the B/E events as (ph, name, ns)."""
    seq = {}
    for l in lines:
        f = l.split(' ', 5)
        if f[0] in ('B', 'E'):
            seq.setdefault((int(f[1]), f[2]), []).append((f[0], json.loads(f[4]), int(f[3])))
    return seq

def llvm_slices(path):
    doc = json.load(open(path))
    seq = {}
    for e in doc['traceEvents'] if type(doc) is dict else doc:
        if e.get('ph') in ('B', 'E'):
            k = (int(e['pid']), str(e['tid']))
            seq.setdefault(k, []).append((e['ph'], e['name'], float(e['ts'])))
    return seq

if sys.argv[1] == 'lines':
    print('\n'.join(out))
    print('PACKETS %d CHUNKS %d PLAIN %d' % (len(packets), chunks, plain))
else:
    a, b = slices(out), llvm_slices(sys.argv[4])
    if sorted(a) != sorted(b):
        fail('threads differ: %s vs %s' % (sorted(a), sorted(b)))
    n = 0
    for k in a:
        x, y = a[k], b[k]
        if [(p, m) for p, m, _ in x] != [(p, m) for p, m, _ in y]:
            fail('calls differ on %s' % (k,))
        for (_, _, t1), (_, _, t2) in zip(x, y):
            # ns against llvm-xray's microseconds, both from the thread's first event
            if abs((t1 - x[0][2]) / 1000.0 - (t2 - y[0][2])) > 0.002:
                fail('times differ on %s: %s ns vs %s us' % (k, t1, t2))
        n += len(x)
    print('SAME', len(a), n)
