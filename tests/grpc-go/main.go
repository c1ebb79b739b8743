// grpc-test-server: the independent gRPC server of pace's tests
// (tests/grpc.rs), on grpc-go: grpc.testing.TestService (the interop
// suite's, whose generated code ships in the grpc module), with server
// reflection. UnaryCall answers with the status its request asks for
// (response_status), else OK with a payload of response_size bytes.
// StreamingOutputCall (server streaming) sends a message per
// response_parameters entry, each after its interval_us and of its size,
// then the status its request asks for. StreamingInputCall (client
// streaming) answers once the client's stream ends, with the size of the
// payloads it received; FullDuplexCall (bidirectional) answers each
// message it receives as StreamingOutputCall would.
//
// It prints "listening ADDR" once it serves; on SIGTERM it prints the calls
// it answered by status code, as JSON ({"OK": 400, "UNAVAILABLE": 40}),
// with "messages_sent" and "messages_received" (the messages of the
// streaming methods, when any),
// "distinct_messages" (how many different response_status.message
// texts UnaryCall received with code 0, when any did) and "compressed" (how many
// request messages came compressed, when any did), "distinct_x_call"
// (how many different values of the metadata x-call unary calls carried,
// when any did) and "x_method_named" (the unary calls whose x-method
// metadata named their method), and exits. It takes gzip-compressed
// messages. With -protoset FILE it writes the descriptor set of
// grpc/testing/test.proto and its imports (as protoc --include_imports -o
// does) and exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

type testServer struct {
	testgrpc.UnimplementedTestServiceServer
	counted *calls
}

func (testServer) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (s testServer) StreamingOutputCall(in *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	if err := s.answer(in, stream.Send); err != nil {
		return err
	}
	if st := in.GetResponseStatus(); st != nil && st.GetCode() != 0 {
		return status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	return nil
}

// answer sends a message per response_parameters entry of in, each after
// its interval.
func (s testServer) answer(in *testgrpc.StreamingOutputCallRequest, send func(*testgrpc.StreamingOutputCallResponse) error) error {
	for _, p := range in.GetResponseParameters() {
		if us := p.GetIntervalUs(); us > 0 {
			time.Sleep(time.Duration(us) * time.Microsecond)
		}
		reply := &testgrpc.StreamingOutputCallResponse{Payload: &testgrpc.Payload{Body: make([]byte, p.GetSize())}}
		if err := send(reply); err != nil {
			return err
		}
		s.counted.Lock()
		s.counted.sent++
		s.counted.Unlock()
	}
	return nil
}

func (s testServer) received() {
	s.counted.Lock()
	s.counted.received++
	s.counted.Unlock()
}

func (s testServer) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	var size int32
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: size})
		}
		if err != nil {
			return err
		}
		size += int32(len(in.GetPayload().GetBody()))
		s.received()
	}
}

func (s testServer) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s.received()
		if err := s.answer(in, stream.Send); err != nil {
			return err
		}
	}
}

func (testServer) UnaryCall(_ context.Context, in *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if st := in.GetResponseStatus(); st != nil && st.GetCode() != 0 {
		return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	if in.GetResponseSize() < 0 {
		return nil, status.Error(codes.InvalidArgument, "negative response_size")
	}
	body := make([]byte, in.GetResponseSize())
	return &testgrpc.SimpleResponse{Payload: &testgrpc.Payload{Body: body}}, nil
}

// calls counts the calls answered, by status code name, the distinct
// status messages requests carried, and the compressed request messages.
type calls struct {
	sync.Mutex
	byCode     map[string]uint64
	messages   map[string]bool
	xCalls     map[string]bool
	xMethod    uint64
	compressed uint64
	sent       uint64
	received   uint64
}

func (c *calls) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	c.Lock()
	c.byCode[status.Code(err).String()]++
	if simple, ok := req.(*testgrpc.SimpleRequest); ok && simple.GetResponseStatus().GetCode() == 0 && simple.GetResponseStatus().GetMessage() != "" {
		c.messages[simple.GetResponseStatus().GetMessage()] = true
	}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for _, value := range md.Get("x-call") {
			c.xCalls[value] = true
		}
		method := info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]
		if values := md.Get("x-method"); len(values) == 1 && values[0] == method {
			c.xMethod++
		}
	}
	c.Unlock()
	return resp, err
}

func (c *calls) countStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if strings.HasPrefix(info.FullMethod, "/grpc.testing.TestService/") {
		c.Lock()
		c.byCode[status.Code(err).String()]++
		c.Unlock()
	}
	return err
}

func (c *calls) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (c *calls) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *calls) HandleConn(context.Context, stats.ConnStats) {}

// HandleRPC counts the request messages that came compressed: their size
// on the wire differs from their size decompressed.
func (c *calls) HandleRPC(_ context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InPayload); ok && in.CompressedLength != in.Length {
		c.Lock()
		c.compressed++
		c.Unlock()
	}
}

// report is what the server prints on SIGTERM.
func (c *calls) report() map[string]uint64 {
	out := map[string]uint64{}
	for code, n := range c.byCode {
		out[code] = n
	}
	if len(c.messages) > 0 {
		out["distinct_messages"] = uint64(len(c.messages))
	}
	if c.compressed > 0 {
		out["compressed"] = c.compressed
	}
	if c.sent > 0 {
		out["messages_sent"] = c.sent
	}
	if c.received > 0 {
		out["messages_received"] = c.received
	}
	if len(c.xCalls) > 0 {
		out["distinct_x_call"] = uint64(len(c.xCalls))
	}
	if c.xMethod > 0 {
		out["x_method_named"] = c.xMethod
	}
	return out
}

// writeProtoset writes the file of TestService and its imports, imports first.
func writeProtoset(path string) error {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(file protoreflect.FileDescriptor) {
		if seen[file.Path()] {
			return
		}
		seen[file.Path()] = true
		imports := file.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(file))
	}
	add(testgrpc.File_grpc_testing_test_proto)
	bytes, err := proto.Marshal(set)
	if err != nil {
		return err
	}
	return os.WriteFile(path, bytes, 0o644)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	protoset := flag.String("protoset", "", "write the descriptor set of TestService to this file and exit")
	flag.Parse()
	if *protoset != "" {
		if err := writeProtoset(*protoset); err != nil {
			log.Fatal(err)
		}
		return
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	counted := &calls{byCode: map[string]uint64{}, messages: map[string]bool{}, xCalls: map[string]bool{}}
	server := grpc.NewServer(grpc.UnaryInterceptor(counted.count), grpc.StreamInterceptor(counted.countStream), grpc.StatsHandler(counted))
	testgrpc.RegisterTestServiceServer(server, testServer{counted: counted})
	reflection.Register(server)
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		server.Stop()
	}()
	fmt.Printf("listening %s\n", listener.Addr())
	if err := server.Serve(listener); err != nil {
		log.Fatal(err)
	}
	counted.Lock()
	defer counted.Unlock()
	out, _ := json.Marshal(counted.report())
	fmt.Println(string(out))
}
