package metal

// Every Objective-C message the Metal device sends, declared once, with the C signature
// objc_msgSend is called through. This file has no build constraint: the table is data,
// tested on every platform (device_selectors_test.go) for well-formed selector strings
// and for a signature whose argument count equals the selector's colon count. On darwin
// device_darwin.go resolves the strings with objc.RegisterName once and sends through
// the typed senders of the signature; a selector can only be passed to the sender of its
// own signature type, so the pairing of selector and C signature is checked by the Go
// compiler, and the colon count by the test. device_prototypes.go holds each selector's
// declaration from Apple's headers; device_sendsites_test.go parses the darwin sources
// and checks every send site against it (arity, register kinds, structs over 16 bytes
// by pointer to a Go mirror of the right size, BOOL results masked, void results
// unused).
//
// Signatures (receiver and _cmd are always x0 and x1; every argument below is one
// integer register — pointers, NSUInteger, NSInteger, BOOL, id, SEL — and every result
// comes back in x0; no float arguments, no struct results, at most 6 registers):
//
//	sig        C type of the call                                                used for
//	msg0       uintptr (id, SEL)                                                 getters (id, NSUInteger, NSInteger, BOOL), void methods
//	msgPtr0    void *(id, SEL)                                                   contents, UTF8String
//	msg1       uintptr (id, SEL, uintptr)                                        one-word setters, newFunctionWithName:, respondsToSelector:
//	msgRef1    uintptr (id, SEL, const struct *)                                 isOperatingSystemAtLeastVersion: (NSOperatingSystemVersion, 24 B)
//	msg2       uintptr (id, SEL, uintptr, uintptr)                               newBufferWithLength:options:, setThreadgroupMemoryLength:atIndex:, ...
//	msgErr2    uintptr (id, SEL, uintptr, NSError **)                            newComputePipelineStateWithFunction:error:
//	msgRefRef2 uintptr (id, SEL, const struct *, const struct *)                 dispatchThreadgroups:threadsPerThreadgroup: (MTLSize, MTLSize; 24 B each)
//	msg3       uintptr (id, SEL, uintptr, uintptr, uintptr)                      setBuffer:offset:atIndex:
//	msgErr3    uintptr (id, SEL, uintptr, uintptr, NSError **)                   newLibraryWithSource:options:error:
//	msgPtr3    uintptr (id, SEL, const void *, uintptr, uintptr)                 setBytes:length:atIndex:, initWithBytes:length:encoding:
//	msgPtr4    uintptr (id, SEL, void *, uintptr, uintptr, uintptr)              newBufferWithBytesNoCopy:length:options:deallocator:
//
// The two "Ref" signatures pass a C struct larger than 16 bytes by value. The arm64
// procedure call standard (AAPCS64 B.4, which Apple's arm64 ABI keeps) passes such a
// composite as a pointer to a caller-owned copy in the next integer register, so the C
// signature `void f(id, SEL, MTLSize, MTLSize)` is, at the machine level, exactly
// `void f(id, SEL, MTLSize *, MTLSize *)`. That is what purego itself does for a struct
// argument over 16 bytes on arm64 (struct_arm64.go: placeStack, "pointer in int register
// on arm64"), here done by hand so that no reflection runs. It holds on arm64 only
// (on amd64 such a struct is copied onto the stack), which is one reason the device is
// built for darwin/arm64 alone. The callee may write the copy, so it is rewritten for
// every call.

// objcSel is one selector: its string, the argument count its signature type gives it,
// the signature's name (for the table test), the receiver it is sent to (for the darwin
// test that asks the receiver whether it responds), and the SEL once resolved.
type objcSel struct {
	name string
	sig  string
	args int
	recv string
	sel  uintptr // set by objcResolve on darwin, before any device exists; read-only after
}

// objcSelectors lists every selector, in declaration order.
var objcSelectors []*objcSel

func objcDefSel(name, sig string, args int, recv string) *objcSel {
	s := &objcSel{name: name, sig: sig, args: args, recv: recv}
	objcSelectors = append(objcSelectors, s)
	return s
}

// One type per signature; the sender of a signature accepts only its own type.
type (
	sigMsg0       struct{ *objcSel }
	sigMsgPtr0    struct{ *objcSel }
	sigMsg1       struct{ *objcSel }
	sigMsgRef1    struct{ *objcSel }
	sigMsg2       struct{ *objcSel }
	sigMsgErr2    struct{ *objcSel }
	sigMsgRefRef2 struct{ *objcSel }
	sigMsg3       struct{ *objcSel }
	sigMsgErr3    struct{ *objcSel }
	sigMsgPtr3    struct{ *objcSel }
	sigMsgPtr4    struct{ *objcSel }
)

func defMsg0(name, recv string) sigMsg0 { return sigMsg0{objcDefSel(name, "msg0", 0, recv)} }
func defMsgPtr0(name, recv string) sigMsgPtr0 {
	return sigMsgPtr0{objcDefSel(name, "msgPtr0", 0, recv)}
}
func defMsg1(name, recv string) sigMsg1 { return sigMsg1{objcDefSel(name, "msg1", 1, recv)} }
func defMsgRef1(name, recv string) sigMsgRef1 {
	return sigMsgRef1{objcDefSel(name, "msgRef1", 1, recv)}
}
func defMsg2(name, recv string) sigMsg2 { return sigMsg2{objcDefSel(name, "msg2", 2, recv)} }
func defMsgErr2(name, recv string) sigMsgErr2 {
	return sigMsgErr2{objcDefSel(name, "msgErr2", 2, recv)}
}
func defMsgRefRef2(name, recv string) sigMsgRefRef2 {
	return sigMsgRefRef2{objcDefSel(name, "msgRefRef2", 2, recv)}
}
func defMsg3(name, recv string) sigMsg3 { return sigMsg3{objcDefSel(name, "msg3", 3, recv)} }
func defMsgErr3(name, recv string) sigMsgErr3 {
	return sigMsgErr3{objcDefSel(name, "msgErr3", 3, recv)}
}
func defMsgPtr3(name, recv string) sigMsgPtr3 {
	return sigMsgPtr3{objcDefSel(name, "msgPtr3", 3, recv)}
}
func defMsgPtr4(name, recv string) sigMsgPtr4 {
	return sigMsgPtr4{objcDefSel(name, "msgPtr4", 4, recv)}
}

// Receivers: "+Class" is a class method of Class, "Class" an instance method of a class,
// "<Protocol>" a method of the Metal object behind a protocol, "NSObject" any object.
var (
	// Foundation and the runtime
	selRetain             = defMsg0("retain", "NSObject")                                   // id retain — +1
	selRelease            = defMsg0("release", "NSObject")                                  // void release — -1
	selRespondsToSelector = defMsg1("respondsToSelector:", "NSObject")                      // BOOL (SEL)
	selAlloc              = defMsg0("alloc", "+NSString")                                   // +1 (uninitialised)
	selNew                = defMsg0("new", "+MTLCompileOptions")                            // +1; also +NSMutableDictionary
	selProcessInfo        = defMsg0("processInfo", "+NSProcessInfo")                        // +0 singleton
	selCount              = defMsg0("count", "NSArray")                                     // NSUInteger
	selObjectAtIndex      = defMsg1("objectAtIndex:", "NSArray")                            // +0 id (NSUInteger)
	selLocalizedDesc      = defMsg0("localizedDescription", "NSError")                      // +0 NSString
	selUTF8String         = defMsgPtr0("UTF8String", "NSString")                            // const char *, inner pointer
	selLengthOfBytes      = defMsg1("lengthOfBytesUsingEncoding:", "NSString")              // NSUInteger (NSStringEncoding)
	selInitWithBytes      = defMsgPtr3("initWithBytes:length:encoding:", "NSString")        // +1 (const void *, NSUInteger, NSStringEncoding)
	selSetObjectForKey    = defMsg2("setObject:forKey:", "NSMutableDictionary")             // void (id, id<NSCopying>)
	selIsOSAtLeast        = defMsgRef1("isOperatingSystemAtLeastVersion:", "NSProcessInfo") // BOOL (NSOperatingSystemVersion)
	selOSVersionString    = defMsg0("operatingSystemVersionString", "NSProcessInfo")        // +0 NSString, for people to read

	// MTLDevice
	selName                    = defMsg0("name", "<MTLDevice>")                                                    // +0 NSString
	selMaxBufferLength         = defMsg0("maxBufferLength", "<MTLDevice>")                                         // NSUInteger
	selMaxThreadgroupMemLength = defMsg0("maxThreadgroupMemoryLength", "<MTLDevice>")                              // NSUInteger
	selRecommendedWorkingSet   = defMsg0("recommendedMaxWorkingSetSize", "<MTLDevice>")                            // uint64_t
	selSupportsFamily          = defMsg1("supportsFamily:", "<MTLDevice>")                                         // BOOL (MTLGPUFamily), macOS 10.15
	selNewCommandQueue         = defMsg0("newCommandQueue", "<MTLDevice>")                                         // +1
	selNewBufferWithLength     = defMsg2("newBufferWithLength:options:", "<MTLDevice>")                            // +1 (NSUInteger, MTLResourceOptions)
	selNewBufferNoCopy         = defMsgPtr4("newBufferWithBytesNoCopy:length:options:deallocator:", "<MTLDevice>") // +1 (void *, NSUInteger, MTLResourceOptions, block)
	selNewLibraryWithSource    = defMsgErr3("newLibraryWithSource:options:error:", "<MTLDevice>")                  // +1 (NSString *, MTLCompileOptions *, NSError **)
	selNewPipelineWithFunction = defMsgErr2("newComputePipelineStateWithFunction:error:", "<MTLDevice>")           // +1 (id<MTLFunction>, NSError **)
	selNewResidencySet         = defMsgErr2("newResidencySetWithDescriptor:error:", "<MTLDevice>")                 // +1 (MTLResidencySetDescriptor *, NSError **), macOS 15

	// MTLResidencySet (macOS 15); commit is the selector of the command buffer's commit
	selAddAllocation    = defMsg1("addAllocation:", "<MTLResidencySet>")    // void (id<MTLAllocation>)
	selRemoveAllocation = defMsg1("removeAllocation:", "<MTLResidencySet>") // void (id<MTLAllocation>)
	selRequestResidency = defMsg0("requestResidency", "<MTLResidencySet>")  // void
	selEndResidency     = defMsg0("endResidency", "<MTLResidencySet>")      // void
	selAllocationCount  = defMsg0("allocationCount", "<MTLResidencySet>")   // NSUInteger, of the committed set (the darwin tests)

	// MTLCompileOptions
	selSetFastMathEnabled      = defMsg1("setFastMathEnabled:", "MTLCompileOptions")            // void (BOOL), deprecated in macOS 15
	selSetMathMode             = defMsg1("setMathMode:", "MTLCompileOptions")                   // void (MTLMathMode), macOS 15
	selSetMathFloatingPointFns = defMsg1("setMathFloatingPointFunctions:", "MTLCompileOptions") // void (MTLMathFloatingPointFunctions), macOS 15
	selSetLanguageVersion      = defMsg1("setLanguageVersion:", "MTLCompileOptions")            // void (MTLLanguageVersion)
	selSetPreprocessorMacros   = defMsg1("setPreprocessorMacros:", "MTLCompileOptions")         // void (NSDictionary *), copied
	selNewFunctionWithName     = defMsg1("newFunctionWithName:", "<MTLLibrary>")                // +1 or nil (NSString *)
	selFunctionNames           = defMsg0("functionNames", "<MTLLibrary>")                       // +0 NSArray<NSString *>
	selMaxTotalThreadsPerTG    = defMsg0("maxTotalThreadsPerThreadgroup", "<MTLComputePipelineState>")
	selThreadExecutionWidth    = defMsg0("threadExecutionWidth", "<MTLComputePipelineState>")
	selStaticThreadgroupMemLen = defMsg0("staticThreadgroupMemoryLength", "<MTLComputePipelineState>")
	selCommandBuffer           = defMsg0("commandBuffer", "<MTLCommandQueue>")                         // +0 (autoreleased)
	selCommandBufferUnretained = defMsg0("commandBufferWithUnretainedReferences", "<MTLCommandQueue>") // +0 (autoreleased); retains nothing it uses
	selAddResidencySet         = defMsg1("addResidencySet:", "<MTLCommandQueue>")                      // void (id<MTLResidencySet>), macOS 15
	selRemoveResidencySet      = defMsg1("removeResidencySet:", "<MTLCommandQueue>")                   // void (id<MTLResidencySet>), macOS 15
	selComputeCommandEncoder   = defMsg0("computeCommandEncoder", "<MTLCommandBuffer>")                // +0 (autoreleased), serial dispatch
	selCommit                  = defMsg0("commit", "<MTLCommandBuffer>")
	selWaitUntilCompleted      = defMsg0("waitUntilCompleted", "<MTLCommandBuffer>")
	selStatus                  = defMsg0("status", "<MTLCommandBuffer>") // MTLCommandBufferStatus
	selError                   = defMsg0("error", "<MTLCommandBuffer>")  // +0 NSError or nil
	selCode                    = defMsg0("code", "NSError")              // NSInteger (MTLCommandBufferError for a command buffer's error)
	selSetComputePipelineState = defMsg1("setComputePipelineState:", "<MTLComputeCommandEncoder>")
	selSetBuffer               = defMsg3("setBuffer:offset:atIndex:", "<MTLComputeCommandEncoder>")
	selSetBufferOffset         = defMsg2("setBufferOffset:atIndex:", "<MTLComputeCommandEncoder>")
	selSetBytes                = defMsgPtr3("setBytes:length:atIndex:", "<MTLComputeCommandEncoder>")
	selSetThreadgroupMemLength = defMsg2("setThreadgroupMemoryLength:atIndex:", "<MTLComputeCommandEncoder>")
	selDispatchThreadgroups    = defMsgRefRef2("dispatchThreadgroups:threadsPerThreadgroup:", "<MTLComputeCommandEncoder>")
	selEndEncoding             = defMsg0("endEncoding", "<MTLComputeCommandEncoder>")
	selContents                = defMsgPtr0("contents", "<MTLBuffer>") // void *, fixed for the life of a shared buffer
)

// objcClass is one Objective-C class, looked up with objc.GetClass once the frameworks
// are loaded. An optional class (one of a later macOS) may stay 0.
type objcClass struct {
	name     string
	optional bool
	cls      uintptr
}

var objcClasses []*objcClass

func objcDefClass(name string) *objcClass {
	c := &objcClass{name: name}
	objcClasses = append(objcClasses, c)
	return c
}

func objcDefOptionalClass(name string) *objcClass {
	c := objcDefClass(name)
	c.optional = true
	return c
}

var (
	clsNSString            = objcDefClass("NSString")
	clsNSMutableDictionary = objcDefClass("NSMutableDictionary")
	clsNSProcessInfo       = objcDefClass("NSProcessInfo")
	clsMTLCompileOptions   = objcDefClass("MTLCompileOptions")
	clsMTLResidencySetDesc = objcDefOptionalClass("MTLResidencySetDescriptor") // macOS 15; +new
)
